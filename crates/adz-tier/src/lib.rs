//! adz over a hierarchy of storage tiers, after HCompress (Devarajan et al., IPDPS 2020).
//!
//! A [`Tiered`] store is an ordered list of tiers, fastest first (memory in `/dev/shm`, a
//! local NVMe directory, a parallel file system), each with a capacity and a bandwidth,
//! configured in a small TOML file ([`TiersConfig`], docs/TIERS.md).
//!
//! - **Write** ([`Tiered::write`]): the input is cut into blocks, each classified; the DP of
//!   [`place()`](place::place) puts each run of blocks on the tier where the write finishes
//!   first, compressed at the rung that matches that tier's speed, within each tier's free
//!   capacity, and each tier's run becomes one adz file (a *segment*).
//! - **Catalog** ([`Catalog`]): one JSON file per dataset, replaced atomically, says which tier
//!   holds each segment and its checksum.
//! - **Read** ([`TieredReader`]): each segment from the fastest tier holding a good copy.
//! - **Flush** ([`Tiered::flush`], [`Tiered::evict`]): segments move down as tiers fill or
//!   age, re-encoded at a denser rung for the slower tier or copied if already dense enough;
//!   a copy is removed only after the one below is written, read back, checked and
//!   catalogued (the `flush` module's docs give the order and why a crash loses nothing).
//! - **Costs** ([`profile`], [`predictor`]): a machine profile measures every rung's ratio and
//!   one-thread and all-core speed per kind of data (`adz profile`); [`Profile::cost_model`]
//!   gives the DP a table per data class and a per-rung regression that predicts the costs
//!   of blocks of classes the profile did not see, corrected online by each encoded frame
//!   ([`Tiered::write_with`]). Segments are encoded on all cores.
//!   [`ProfileChoice`] decides which profile gives the costs (given, none, or the default
//!   one), for the CLI and the Python binding alike.
//!
//! ```
//! use adz_tier::{CostTable, Tiered, TiersConfig};
//!
//! let dir = tempfile::tempdir()?;
//! let config = TiersConfig::parse(r#"
//!     [[tier]]
//!     name = "fast"
//!     path = "fast"
//!     capacity = "2MiB"
//!     bandwidth = "2GB/s"
//!     [[tier]]
//!     name = "slow"
//!     path = "slow"
//!     bandwidth = "100MB/s"
//! "#, dir.path())?;
//! let tiers = Tiered::open(config)?;
//! let costs = CostTable::reference(&CostTable::default_rungs(), 1);
//! let data = b"tiered adaptive compression ".repeat(200_000);
//! tiers.write("run-1", &mut &data[..], &costs)?;
//! assert_eq!(tiers.reader("run-1")?.read_range(1000, 28)?, &data[1000..1028]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod catalog;
mod config;
mod error;
mod flush;
pub mod place;
pub mod predictor;
#[cfg_attr(not(feature = "s3"), allow(dead_code))]
mod prefixed;
pub mod profile;
mod tiered;

pub use catalog::{Catalog, Copy, Segment, CATALOG_SUFFIX, CATALOG_VERSION};
pub use config::{parse_size, FlushPolicy, S3Tier, TierConfig, TiersConfig};
pub use error::TierError;
pub use flush::{FlushReport, TierStatus};
pub use place::{place, CostTable, Piece, Plan, PlanSegment, RungCost, TierSlot};
pub use predictor::{Accuracy, Features, Predictor};
pub use profile::{
    open_with_profile, ChosenCosts, ChosenProfile, CorePower, CostModel, LeftOut, Profile,
    ProfileChoice, PROFILE_VERSION,
};
pub use tiered::{Tier, Tiered, TieredReader, WriteReport};
