//! What the controller costs per block: 20 000 blocks of the simulator's reference data
//! through 6000 MB/s with two workers, S1 against static none (whose decisions cost
//! nothing), wall time of the whole simulation over the blocks.
//!
//!     cargo run --release -p adz-control --example decision_cost

use std::time::Instant;

use adz_control::sim::{DataModel, Segment, SimConfig};
use adz_control::{Controller, ControllerConfig, Link, Strategy};

fn main() {
    let none = Strategy::Static("none".parse().expect("a rung"));
    for (name, strategy) in [("s1", Strategy::Throughput), ("static none", none)] {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let cfg = ControllerConfig::new(strategy, Link::Fixed(6000e6), 2);
            let mut ctl = Controller::new(cfg);
            let t = Instant::now();
            let rep = SimConfig::new(2, 6000e6)
                .run(&mut ctl, &[Segment::new(20_000, DataModel::reference())]);
            best = best.min(t.elapsed().as_secs_f64() / rep.blocks.len() as f64);
        }
        println!("{name:12} {:6.1} us per block (best of 5)", best * 1e6);
    }
}
