//! How generated values move over time: the shapes of Tsinghua's IoT-benchmark
//! ([`Shape`]) for custom's numeric columns, and the [`Wave`] cpu-only's usage fields can
//! follow instead of TSBS's random walk.

/// A shape for cpu-only's ten usage fields (`workload.shape`): each host's field follows
/// it between 0 and 100 instead of TSBS's random walk, at its own phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wave {
    pub shape: Shape,
    pub period_ns: i64,
    /// Gaussian noise's standard deviation as a share of 100.
    pub noise: f64,
}

impl Wave {
    /// The value at `ts` of the wave at `phase` (0..1 of a period) between `lo` and
    /// `lo + span`, with noise from `r`.
    pub(crate) fn value(&self, ts: i64, phase: f64, lo: f64, span: f64, r: u64) -> f64 {
        let period = self.period_ns.max(1);
        let x = (ts.rem_euclid(period) as f64 / period as f64 + phase).fract();
        let mut v = lo + span * self.shape.at(x);
        if self.noise > 0.0 {
            v += self.noise * span * gaussian(r);
        }
        v.clamp(lo, lo + span)
    }
}

/// A shape's default period: an hour.
pub const DEFAULT_PERIOD_NS: i64 = 3_600_000_000_000;

/// How a numeric column's values move over time, as Tsinghua's IoT-benchmark shapes them:
/// a server's compression, so what a value costs it, depends on the shape. Each device's
/// wave has its own phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// Uniform in `[min, max]`, each value drawn on its own (the default).
    #[default]
    Random,
    /// Always `min` (plus noise, kept within `min` and `max`: it only rises).
    Constant,
    /// A sine from `min` up to `max` and back once a period.
    Sine,
    /// `min` for the first half of each period, `max` for the second.
    Square,
    /// From `min` up to `max` over each period, then back to `min` at once.
    Sawtooth,
}

impl Shape {
    /// The shapes' names, as the scenario writes them.
    pub const NAMES: [&'static str; 5] = ["random", "constant", "sine", "square", "sawtooth"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn from_name(name: &str) -> Option<Shape> {
        [
            Shape::Random,
            Shape::Constant,
            Shape::Sine,
            Shape::Square,
            Shape::Sawtooth,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }

    /// The wave at `x` in [0, 1) of its period, from 0 (min) to 1 (max).
    pub(crate) fn at(self, x: f64) -> f64 {
        match self {
            Shape::Random | Shape::Constant => 0.0,
            Shape::Sine => (1.0 - (std::f64::consts::TAU * x).cos()) / 2.0,
            Shape::Square => {
                if x < 0.5 {
                    0.0
                } else {
                    1.0
                }
            }
            Shape::Sawtooth => x,
        }
    }
}

/// A standard normal value from 64 random bits (Box-Muller over two 32-bit halves).
pub(crate) fn gaussian(r: u64) -> f64 {
    let u1 = ((r >> 32) as f64 + 1.0) / 4_294_967_296.0;
    let u2 = (r & 0xffff_ffff) as f64 / 4_294_967_296.0;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}
