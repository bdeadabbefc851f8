//! tsload-sweep: the pure parts of `tsload sweep` (no network, no processes; output only
//! to the `io::Write` the caller hands over).
//!
//! - [`grid`]: the `[sweep]` table's lists validated ([`Grid::new`]) and expanded into
//!   points, first key outermost ([`Grid::points`]).
//! - [`table`]: one [`SweepRow`] per point (the point plus what its run measured) in a
//!   [`SweepTable`], written as aligned text, CSV or JSON; its [`Measure`] (writes, queries
//!   or transactions) names the rate columns.
//! - [`verdict`] (tsload-core's, shared with the HTML pages): each run's exit, what the
//!   server stored and whether its figures are a measure ([`Verdict`]); a point that is
//!   not is marked everywhere and left out of fits.
//! - [`fit`]: least squares of `t_request = t_service + k * RTT` ([`fit_rtt`],
//!   [`SweepTable::fit_groups`]): round trips per request, the zero-RTT cost, R² and the
//!   RTT at which throughput halves.
//! - [`plot`]: SVG plots through plotters' SVG backend: throughput vs RTT with the fitted
//!   model, a batch x workers heat map, or lines against the first varying key, chosen by
//!   [`choose_plot`].
//!
//! ```
//! use tsload_sweep::{Grid, SweepValue};
//!
//! let grid = Grid::new(vec![
//!     ("delay", vec![SweepValue::from("0ms"), SweepValue::from("1ms")]),
//!     ("workers", vec![SweepValue::Int(1), SweepValue::Int(16)]),
//! ])
//! .unwrap();
//! let labels: Vec<String> = grid.points().iter().map(|p| p.label()).collect();
//! assert_eq!(labels[1], "delay=0ms workers=16");
//! ```

pub mod compare;
pub mod fit;
pub mod grid;
pub mod plot;
pub mod table;

pub use fit::{
    DEFAULT_RTT_KEYS, FitError, FitGroup, NoHalving, RttFit, TRequestSource, fit_rows, fit_rtt,
};
pub use grid::{Axis, Grid, GridError, MAX_POINTS, Point, SweepValue, parse_duration_ms};
pub use plot::{
    PlotError, PlotKind, PlotOptions, Throughput, choose_plot, format_compact, render_svg,
    write_svg,
};
pub use table::{Measure, Rates, RttStats, SweepRow, SweepTable, TableError};
pub use tsload_report::verdict::{self, Flaw, FlawKind, Verdict};
