//! `adz-bench compare OLD NEW`: two `results.csv` of `adz-bench run` (the same plan, two builds
//! or two days), cell by cell: seconds, ratio, and which rungs the frames used.

use std::collections::BTreeMap;

use crate::ab::geo_mean;
use crate::results::{link_key, Key, Row, KIND_ORACLE};

/// The markdown comparison: every cell found in both files (oracle rows left out), NEW's speed
/// relative to OLD (OLD seconds / NEW seconds; above 1 is faster), the ratios, and whether the
/// rungs used changed; then the geometric mean of the speed per (link, kind) and the cells
/// found in only one file.
pub fn markdown(old: &[Row], new: &[Row]) -> String {
    let index = |rows: &[Row]| -> BTreeMap<Key, Row> {
        rows.iter()
            .filter(|r| r.kind != KIND_ORACLE)
            .map(|r| {
                let key =
                    (r.dataset.clone(), link_key(r.link_mbs), r.workload.clone(), r.config.clone());
                (key, r.clone())
            })
            .collect()
    };
    let (a, b) = (index(old), index(new));
    let mut s = String::from(
        "| dataset | link MB/s | workload | config | old s | new s | speed | old ratio | new ratio | rungs |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut groups: BTreeMap<(u64, String), Vec<f64>> = BTreeMap::new();
    let mut changed = 0;
    for (key, o) in &a {
        let Some(n) = b.get(key) else { continue };
        let speed = o.seconds / n.seconds;
        groups.entry((key.1, o.kind.clone())).or_default().push(speed);
        let rungs = if o.configs_used == n.configs_used {
            "same".to_owned()
        } else {
            changed += 1;
            format!("{} → {}", o.configs_used, n.configs_used)
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {} |\n",
            key.0, o.link_mbs, key.2, key.3, o.seconds, n.seconds, speed, o.ratio, n.ratio, rungs
        ));
    }
    s.push_str("\n| link MB/s | kind | cells | geometric mean speed |\n|---|---|---|---|\n");
    for ((link, kind), v) in &groups {
        s.push_str(&format!(
            "| {} | {kind} | {} | {:.3} |\n",
            *link as f64 / 1000.0,
            v.len(),
            geo_mean(v)
        ));
    }
    let only = |x: &BTreeMap<Key, Row>, y: &BTreeMap<Key, Row>| {
        x.keys().filter(|k| !y.contains_key(*k)).count()
    };
    s.push_str(&format!(
        "\nCells in both: {}; rungs changed in {changed}; only in old: {}; only in new: {}.\n",
        a.keys().filter(|k| b.contains_key(*k)).count(),
        only(&a, &b),
        only(&b, &a)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(config: &str, kind: &str, seconds: f64, used: &str) -> Row {
        Row {
            dataset: "text".into(),
            bytes: 1 << 20,
            link_mbs: 117.0,
            workload: "sync".into(),
            config: config.into(),
            kind: kind.into(),
            threads: 2,
            seconds,
            write_mbs: 1.0 / seconds,
            ratio: 2.0,
            stored_bytes: 1 << 19,
            compute_seconds: None,
            async_share: None,
            configs_used: used.into(),
        }
    }

    #[test]
    fn cells_are_joined_and_rung_changes_shown() {
        let old =
            [row("s1", "adaptive", 2.0, "zstd:3=8"), row("zstd:3", "static", 1.0, "zstd:3=8")];
        let new = [
            row("s1", "adaptive", 1.0, "zstd:1=8"),
            row("zstd:3", "static", 1.0, "zstd:3=8"),
            row("s2", "adaptive", 1.0, ""),
        ];
        let s = markdown(&old, &new);
        assert!(s.contains("| text | 117 | sync | s1 | 2.000 | 1.000 | 2.000 |"), "{s}");
        assert!(s.contains("zstd:3=8 → zstd:1=8"), "{s}");
        assert!(s.contains("| 117 | adaptive | 1 | 2.000 |"), "{s}");
        assert!(s.contains("| 117 | static | 1 | 1.000 |"), "{s}");
        assert!(
            s.contains("Cells in both: 2; rungs changed in 1; only in old: 0; only in new: 1."),
            "{s}"
        );
    }
}
