//! The SVG plots, checked as XML: docs/experiments.md R1 (rate vs RTT) and R4 (batch x workers) data
//! drawn, parsed back with roxmltree, and searched for titles, axis labels, one marker per
//! point and one annotated cell per grid point. Set `TSLOAD_SWEEP_SVG_DIR` to keep the files.

use tsload_sweep::{
    Grid, Measure, PlotKind, PlotOptions, Rates, RttStats, SweepRow, SweepTable, SweepValue,
    Throughput, choose_plot, format_compact, render_svg,
};

fn row(point: tsload_sweep::Point, rtt: Option<f64>, rows_per_s: f64) -> SweepRow {
    SweepRow {
        point,
        rtt: rtt.map(|m| RttStats {
            method: "icmp".into(),
            median_ms: m,
            min_ms: None,
            avg_ms: None,
            max_ms: None,
        }),
        rates: Rates::Writes {
            rows_per_s,
            metrics_per_s: rows_per_s * 11.0,
            requests_per_s: rows_per_s / 10.0,
        },
        latency_mean_ms: 1.0,
        latency_p50_ms: 1.0,
        latency_p99_ms: 2.0,
        service_mean_ms: 1.0,
        errors: 0,
        client_cpu_s: 0.0,
        server_cpu_s: None,
        bytes_per_metric: None,
        workers: 16,
        batch: 10,
        in_flight: 1,
        stop_reason: "duration".parse().ok(),
        verdict: tsload_sweep::Verdict::passed(None),
    }
}

const R1: [(f64, f64); 7] = [
    (0.034, 199_141.88),
    (0.254, 155_809.98),
    (0.466, 122_463.81),
    (0.878, 81_191.54),
    (1.088, 67_626.02),
    (1.286, 58_693.38),
    (2.101, 37_096.76),
];

fn r1_table() -> SweepTable {
    let delays = ["0ms", "0.2ms", "0.4ms", "0.8ms", "1ms", "1.2ms", "2ms"];
    let grid = Grid::new(vec![(
        "delay",
        delays
            .iter()
            .map(|&d| SweepValue::from(d))
            .collect::<Vec<_>>(),
    )])
    .unwrap();
    let mut t = SweepTable::new(&grid);
    for (p, (rtt, rate)) in grid.points().into_iter().zip(R1) {
        t.push(row(p, Some(rtt), rate)).unwrap();
    }
    t
}

const R4_WORKERS: [i64; 5] = [1, 16, 50, 100, 200];
const R4_BATCH: [i64; 5] = [1, 50, 100, 200, 500];
/// fields/s, batch rows x workers columns.
const R4: [[f64; 5]; 5] = [
    [3_898.0, 58_217.0, 127_111.0, 165_754.0, 202_844.0],
    [
        136_378.0,
        1_634_204.0,
        2_773_786.0,
        3_363_458.0,
        3_703_033.0,
    ],
    [
        198_376.0,
        2_494_268.0,
        4_007_320.0,
        4_753_681.0,
        5_095_771.0,
    ],
    [
        278_254.0,
        3_368_597.0,
        5_214_061.0,
        6_040_167.0,
        6_283_312.0,
    ],
    [
        352_745.0,
        4_281_762.0,
        6_544_214.0,
        7_267_296.0,
        7_290_116.0,
    ],
];

fn r4_table() -> SweepTable {
    let ints = |v: &[i64]| v.iter().map(|&i| SweepValue::Int(i)).collect::<Vec<_>>();
    let grid = Grid::new(vec![
        ("batch", ints(&R4_BATCH)),
        ("workers", ints(&R4_WORKERS)),
    ])
    .unwrap();
    let mut t = SweepTable::new(&grid);
    for (n, p) in grid.points().into_iter().enumerate() {
        let fields = R4[n / 5][n % 5];
        let mut r = row(p, None, fields / 101.0);
        r.rates = Rates::Writes {
            rows_per_s: fields / 101.0,
            metrics_per_s: fields,
            requests_per_s: fields / 1010.0,
        };
        t.push(r).unwrap();
    }
    t
}

fn keep(name: &str, svg: &str) {
    if let Ok(dir) = std::env::var("TSLOAD_SWEEP_SVG_DIR") {
        std::fs::write(std::path::Path::new(&dir).join(name), svg).unwrap();
    }
}

/// All `<text>` contents, trimmed.
fn texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect()
}

fn count(doc: &roxmltree::Document, tag: &str) -> usize {
    doc.descendants().filter(|n| n.has_tag_name(tag)).count()
}

#[test]
fn rate_vs_rtt_r1() {
    let t = r1_table();
    let kind = choose_plot(&t.axes, &["delay"]);
    assert_eq!(kind, PlotKind::RateVsRtt);
    let svg = render_svg(&t, &kind, &PlotOptions::default()).unwrap();
    keep("r1.svg", &svg);
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    assert!(doc.root_element().has_tag_name("svg"));
    assert_eq!(doc.root_element().attribute("width"), Some("900"));
    let texts = texts(&doc);
    for wanted in [
        "rows/s vs RTT",
        "measured RTT (ms, median)",
        "rows/s",
        "measured rows/s",
    ] {
        assert!(
            texts.iter().any(|t| t == wanted),
            "no <text>{wanted}</text> in {texts:?}"
        );
    }
    let model = texts
        .iter()
        .find(|t| t.starts_with("model C / (t_service + k x RTT)"))
        .expect("the model series has a legend entry");
    assert!(model.contains("k 1.7"), "{model}");
    // Tick labels on the y axis in compact form, e.g. "100k".
    assert!(texts.iter().any(|t| t.ends_with('k')), "{texts:?}");
    // One marker per measured point.
    assert_eq!(count(&doc, "circle"), R1.len());
    // Two lines: measured and model (plus the legend's two sample strokes).
    let polylines: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .collect();
    assert!(polylines.len() >= 2, "{}", polylines.len());
    let longest = polylines
        .iter()
        .map(|n| {
            n.attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .count()
        })
        .max()
        .unwrap();
    assert!(
        longest > 100,
        "the model curve is sampled finely: {longest}"
    );
}

/// A point that stored nothing was drawn like any other, and fitted.
#[test]
fn a_point_that_is_no_measure_is_not_drawn_and_none_left_is_no_plot() {
    let mut t = r1_table();
    t.rows[3].verdict = tsload_sweep::Verdict {
        exit: 1,
        stored: Some(0),
        flaw: Some(tsload_sweep::Flaw {
            kind: tsload_sweep::FlawKind::Failed,
            why: "the run stopped on a fatal error".into(),
        }),
    };
    let svg = render_svg(&t, &PlotKind::RateVsRtt, &PlotOptions::default()).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "circle"), R1.len() - 1);
    let failed = t.rows[3].verdict.clone();
    for r in &mut t.rows {
        r.verdict = failed.clone();
    }
    assert!(matches!(
        render_svg(&t, &PlotKind::RateVsRtt, &PlotOptions::default()),
        Err(tsload_sweep::PlotError::NoMeasure)
    ));
}

#[test]
fn rate_vs_rtt_falls_back_to_the_delay_setting() {
    let mut t = r1_table();
    for r in &mut t.rows {
        r.rtt = None;
    }
    let svg = render_svg(&t, &PlotKind::RateVsRtt, &PlotOptions::default()).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts = texts(&doc);
    assert!(
        texts
            .iter()
            .any(|t| t == "delay setting (ms; no RTT measured)"),
        "{texts:?}"
    );
    assert_eq!(count(&doc, "circle"), R1.len());
    // No RTT, so no fit and no model series.
    assert!(!texts.iter().any(|t| t.starts_with("model")));
}

#[test]
fn heatmap_r4() {
    let t = r4_table();
    let kind = choose_plot(&t.axes, &["delay"]);
    assert_eq!(
        kind,
        PlotKind::Heatmap {
            x_key: "workers".into(),
            y_key: "batch".into()
        }
    );
    let svg = render_svg(&t, &kind, &PlotOptions::default()).unwrap();
    keep("r4.svg", &svg);
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    let texts = texts(&doc);
    assert!(
        texts
            .iter()
            .any(|t| t == "metrics/s by workers x batch (color: log scale)"),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "workers"));
    assert!(texts.iter().any(|t| t == "batch"));
    // Every cell annotated with its value.
    for line in R4 {
        for v in line {
            let label = format_compact(v);
            assert!(texts.contains(&label), "no cell label {label} in {texts:?}");
        }
    }
    assert!(texts.contains(&"3.9k".to_string()));
    assert!(texts.contains(&"7.29M".to_string()));
    // Axis tick labels are the swept values: workers 1..200 across, batch 1..500 up.
    for v in R4_WORKERS.iter().chain(&R4_BATCH) {
        assert!(
            texts.contains(&v.to_string()),
            "no tick label {v} in {texts:?}"
        );
    }
    // 25 filled cells, with different colors for the smallest and the largest, and the
    // colour scale's 64 steps beside them.
    let cells: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") != Some("#FFFFFF"))
        .collect();
    assert_eq!(cells.len(), 25 + 64, "{svg}");
    // The scale names its ends and its (geometric, on a log scale) middle: the map had
    // no scale at all before.
    let mid = format_compact((3_898.0f64 * 7_290_116.0).sqrt());
    assert!(texts.contains(&mid), "no scale middle {mid} in {texts:?}");
    assert!(
        texts.iter().filter(|t| *t == "7.29M").count() >= 2,
        "{texts:?}"
    );
    let fills: std::collections::BTreeSet<&str> =
        cells.iter().filter_map(|n| n.attribute("fill")).collect();
    assert!(fills.len() > 10, "{fills:?}");
}

#[test]
fn lines_one_series_per_other_key() {
    let ints = |v: &[i64]| v.iter().map(|&i| SweepValue::Int(i)).collect::<Vec<_>>();
    let grid = Grid::new(vec![
        (
            "delay",
            vec![
                SweepValue::from("0ms"),
                SweepValue::from("1ms"),
                SweepValue::from("5ms"),
            ],
        ),
        ("workers", ints(&[1, 16])),
        ("batch", ints(&[100])),
    ])
    .unwrap();
    let mut t = SweepTable::new(&grid);
    for (n, p) in grid.points().into_iter().enumerate() {
        let rtt = p.get("delay").and_then(SweepValue::as_ms).unwrap() + 0.05;
        let w = p.get("workers").and_then(SweepValue::as_f64).unwrap();
        t.push(row(p, Some(rtt), w * 1000.0 / (1.0 + rtt) + n as f64))
            .unwrap();
    }
    let kind = choose_plot(&t.axes, &["delay"]);
    assert_eq!(
        kind,
        PlotKind::Lines {
            x_key: "delay".into()
        }
    );
    let opts = PlotOptions {
        throughput: Some(Throughput::Requests),
        title: Some("sweep & <check>".into()),
        ..PlotOptions::default()
    };
    let svg = render_svg(&t, &kind, &opts).unwrap();
    keep("lines.svg", &svg);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed, title escaped");
    let texts = texts(&doc);
    for wanted in [
        "sweep & <check>",
        "measured RTT (ms, median)",
        "requests/s",
        "workers=1",
        "workers=16",
    ] {
        assert!(
            texts.iter().any(|t| t == wanted),
            "no <text>{wanted}</text> in {texts:?}"
        );
    }
    // batch is constant, so it does not split series.
    assert!(!texts.iter().any(|t| t.contains("batch=")));
    assert_eq!(count(&doc, "circle"), 6);
}

#[test]
fn lines_against_categories() {
    let grid = Grid::new(vec![
        (
            "mode",
            vec![
                SweepValue::from("stmt"),
                SweepValue::from("sql"),
                SweepValue::from("schemaless"),
            ],
        ),
        ("workers", vec![SweepValue::Int(4), SweepValue::Int(8)]),
    ])
    .unwrap();
    let mut t = SweepTable::new(&grid);
    for (n, p) in grid.points().into_iter().enumerate() {
        t.push(row(p, None, 1000.0 * (n + 1) as f64)).unwrap();
    }
    let kind = choose_plot(&t.axes, &["delay"]);
    assert_eq!(
        kind,
        PlotKind::Lines {
            x_key: "mode".into()
        }
    );
    let svg = render_svg(&t, &kind, &PlotOptions::default()).unwrap();
    keep("categories.svg", &svg);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts = texts(&doc);
    for wanted in [
        "stmt",
        "sql",
        "schemaless",
        "mode",
        "rows/s",
        "workers=4",
        "workers=8",
    ] {
        assert!(
            texts.iter().any(|t| t == wanted),
            "no <text>{wanted}</text> in {texts:?}"
        );
    }
    assert_eq!(count(&doc, "circle"), 6);
}

#[test]
fn choose_plot_rules() {
    let grid = |keys: Vec<(&str, Vec<SweepValue>)>| Grid::new(keys).unwrap().axes().to_vec();
    let two = || vec![SweepValue::Int(1), SweepValue::Int(2)];
    let one = || vec![SweepValue::Int(1)];
    assert_eq!(
        choose_plot(
            &grid(vec![("workers", two()), ("batch", two())]),
            &["delay"]
        ),
        PlotKind::Heatmap {
            x_key: "workers".into(),
            y_key: "batch".into()
        }
    );
    // A constant key does not count as varying.
    assert_eq!(
        choose_plot(
            &grid(vec![("delay", one()), ("batch", two()), ("workers", two())]),
            &["delay"]
        ),
        PlotKind::Heatmap {
            x_key: "workers".into(),
            y_key: "batch".into()
        }
    );
    assert_eq!(
        choose_plot(
            &grid(vec![("workers", one()), ("delay", two())]),
            &["delay"]
        ),
        PlotKind::RateVsRtt
    );
    assert_eq!(
        choose_plot(&grid(vec![("delay", one())]), &["delay"]),
        PlotKind::RateVsRtt
    );
    assert_eq!(
        choose_plot(
            &grid(vec![
                ("batch", two()),
                ("workers", two()),
                ("in_flight", two())
            ]),
            &["delay"]
        ),
        PlotKind::Lines {
            x_key: "batch".into()
        }
    );
    assert_eq!(
        choose_plot(&grid(vec![("rate", one()), ("workers", two())]), &["delay"]),
        PlotKind::Lines {
            x_key: "workers".into()
        }
    );
}

#[test]
fn plot_errors() {
    let mut t = r1_table();
    let err = render_svg(
        &t,
        &PlotKind::Heatmap {
            x_key: "workers".into(),
            y_key: "batch".into(),
        },
        &PlotOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the plot names key `workers`, which the sweep does not have (keys: delay)"
    );
    t.rows.clear();
    assert!(matches!(
        render_svg(&t, &PlotKind::RateVsRtt, &PlotOptions::default()),
        Err(tsload_sweep::PlotError::NoRows)
    ));
}

/// R2's shape: OLTP transactions against the RTT, as a query sweep measures them.
fn r2_table(measure: Measure) -> SweepTable {
    let grid = Grid::new(vec![(
        "delay",
        vec![SweepValue::from("0.25ms"), SweepValue::from("10ms")],
    )])
    .unwrap();
    let mut t = SweepTable::measuring(&grid, measure);
    for (p, (rtt, tps)) in grid
        .points()
        .into_iter()
        .zip([(0.38, 787.36), (10.2, 47.4)])
    {
        let mut r = row(p, Some(rtt), 0.0);
        r.workers = 10;
        r.batch = 1;
        r.rates = match measure {
            Measure::Transactions => Rates::Transactions {
                transactions_per_s: tps,
                statements_per_s: tps * 18.0,
                rows_read_per_s: tps * 313.6,
            },
            _ => Rates::Queries {
                requests_per_s: tps,
                statements_per_s: tps,
                rows_read_per_s: tps * 60.0,
            },
        };
        t.push(r).unwrap();
    }
    t
}

#[test]
fn a_query_sweep_plots_what_it_measured() {
    for (measure, unit) in [
        (Measure::Transactions, "transactions/s"),
        (Measure::Queries, "requests/s"),
    ] {
        let t = r2_table(measure);
        let kind = choose_plot(&t.axes, &["delay"]);
        let svg = render_svg(&t, &kind, &PlotOptions::default()).unwrap();
        keep(&format!("r2-{unit}.svg").replace('/', "-"), &svg);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let texts = texts(&doc);
        for wanted in [format!("{unit} vs RTT"), unit.to_string()] {
            assert!(
                texts.contains(&wanted),
                "no <text>{wanted}</text> in {texts:?}"
            );
        }
        assert!(
            !texts.iter().any(|t| t.contains("rows/s")),
            "a query sweep plotted as rows/s: {texts:?}"
        );
        assert_eq!(count(&doc, "circle"), 2);
        // Its statements and rows read, when asked for.
        let opts = PlotOptions {
            throughput: Some(Throughput::RowsRead),
            ..PlotOptions::default()
        };
        let svg = render_svg(&t, &kind, &opts).unwrap();
        assert!(svg.contains("rows read/s"), "{svg}");
        // Not what it did not measure.
        let opts = PlotOptions {
            throughput: Some(Throughput::Rows),
            ..PlotOptions::default()
        };
        let err = render_svg(&t, &kind, &opts).unwrap_err();
        assert!(err.to_string().contains("did not measure rows/s"), "{err}");
    }
    // A write sweep's heat map is of metrics, its lines and RTT plots of rows.
    assert_eq!(
        Throughput::default_for(&PlotKind::RateVsRtt, Measure::Writes),
        Throughput::Rows
    );
}

#[test]
fn compact_numbers() {
    assert_eq!(format_compact(3_898.0), "3.9k");
    assert_eq!(format_compact(7_290_116.0), "7.29M");
    assert_eq!(format_compact(12_405_648.0), "12.4M");
    assert_eq!(format_compact(202_844.0), "203k");
    assert_eq!(format_compact(0.0), "0");
    assert_eq!(format_compact(0.336), "0.336");
    assert_eq!(format_compact(2.5), "2.5");
    assert_eq!(format_compact(6.6e9), "6.6G");
}

#[test]
fn heatmap_with_a_missing_cell_and_a_single_row() {
    let mut t = r4_table();
    t.rows.remove(7); // batch 50, workers 50
    let kind = choose_plot(&t.axes, &["delay"]);
    let svg = render_svg(&t, &kind, &PlotOptions::default()).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let labels = texts(&doc);
    assert!(labels.contains(&"-".to_string()), "{labels:?}");
    assert!(!labels.contains(&format_compact(R4[1][2])));
    let grey = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("#DCDCDC"))
        .count();
    assert_eq!(grey, 1, "{svg}");

    // One batch value only: a single row of cells still draws.
    let ints = |v: &[i64]| v.iter().map(|&i| SweepValue::Int(i)).collect::<Vec<_>>();
    let grid = Grid::new(vec![("batch", ints(&[100])), ("workers", ints(&[1, 16]))]).unwrap();
    let mut t = SweepTable::new(&grid);
    for p in grid.points() {
        t.push(row(p, None, 1000.0)).unwrap();
    }
    let kind = PlotKind::Heatmap {
        x_key: "workers".into(),
        y_key: "batch".into(),
    };
    let svg = render_svg(&t, &kind, &PlotOptions::default()).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(texts(&doc).iter().filter(|t| *t == "11k").count(), 2);
}
