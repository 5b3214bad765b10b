import json, numpy as np, sys
p=json.load(open(sys.argv[1]))
S=p['samples']; R=len(p['rungs'])
def expand(f):
    h,r=f['entropy'],f['repeat']; w=f['width']
    return [1,h,h*h,f['spread'],r,r*r,h*r,f['zeros'],f['same1'],f['same_w'],float(w==2),float(w==4),float(w==8),max(0,1-h)**0.5]
X=np.array([expand(s['features']) for s in S]); sets=np.array([s['set'] for s in S])
LR=np.log(np.maximum(1,np.array([s['ratio'] for s in S]))); LS=np.log(np.array([s['speed'] for s in S]))
def fit(X,y,lam):
    n=len(X); A=X.T@X; A[1:,1:]+=np.eye(X.shape[1]-1)*lam*n; A[0,0]+=1e-9*n+1e-12
    return np.linalg.solve(A,X.T@y)
for lam in [1e-6,1e-4,1e-3,1e-2,3e-2,1e-1,1]:
    er=[];es=[]
    for s in set(sets):
        tr=sets!=s; te=sets==s
        for r in range(R):
            wr=fit(X[tr],LR[tr,r],lam); ws=fit(X[tr],LS[tr,r],lam)
            pr=np.exp(np.clip(X[te]@wr,0,LR[tr,r].max()+np.log(2))); ps=np.exp(np.clip(X[te]@ws,LS[tr,r].min()-np.log(2),LS[tr,r].max()+np.log(2)))
            ar=np.exp(LR[te,r]); a_s=np.exp(LS[te,r])
            er+=list(abs(pr-ar)/ar); es+=list(abs(ps-a_s)/a_s)
    er=np.array(er);es=np.array(es)
    print(lam, (er<=.04).mean().round(3), (es<=.1).mean().round(3), np.median(er).round(3), np.median(es).round(3))
print("pooled like adz (weighted mean of per-set medians):")
for lam in [1e-6,1e-2]:
    tot=0; parts=[]
    for s in sorted(set(sets)):
        er=[];es=[]
        tr=sets!=s; te=sets==s
        for r in range(R):
            wr=fit(X[tr],LR[tr,r],lam); ws=fit(X[tr],LS[tr,r],lam)
            pr=np.exp(np.clip(X[te]@wr,0,LR[tr,r].max()+np.log(2))); ps=np.exp(np.clip(X[te]@ws,LS[tr,r].min()-np.log(2),LS[tr,r].max()+np.log(2)))
            ar=np.exp(LR[te,r]); a_s=np.exp(LS[te,r])
            er+=list(abs(pr-ar)/ar); es+=list(abs(ps-a_s)/a_s)
        er=np.sort(er); es=np.sort(es); n=len(er)
        parts.append((n,(er<=.04).mean(),(es<=.1).mean(),er[n//2],es[n//2]))
    N=sum(p[0] for p in parts)
    print(lam,[round(sum(p[0]*p[i] for p in parts)/N,3) for i in range(1,5)])
