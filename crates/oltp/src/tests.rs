//! Unit tests of the requests the workload makes: statement counts, placeholders,
//! determinism, the load split, and option errors. No database.

use std::collections::{BTreeMap, BTreeSet};

use tsload_core::{Param, QueryRequest, QuerySource, QueryWorkload};

use super::*;

fn config(kind: OltpKind, dialect: Dialect) -> OltpConfig {
    OltpConfig::new(kind, dialect)
}

fn requests(source: &mut dyn QuerySource, n: usize) -> Vec<QueryRequest> {
    (0..n)
        .map(|_| {
            let mut r = QueryRequest::default();
            assert!(source.next(&mut r));
            r
        })
        .collect()
}

fn drain(mut source: Box<dyn QuerySource>) -> Vec<QueryRequest> {
    let mut out = Vec::new();
    let mut r = QueryRequest::default();
    while source.next(&mut r) {
        out.push(std::mem::take(&mut r));
    }
    out
}

/// The table number in a statement's text (`sbtestN`).
fn table_of(text: &str) -> u32 {
    let at = text.find("sbtest").expect("names a table") + "sbtest".len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

fn int(p: &Param) -> i64 {
    match p {
        Param::Int(v) => *v,
        other => panic!("expected an integer parameter, got {other:?}"),
    }
}

fn text(p: &Param) -> &str {
    match p {
        Param::Text(v) => v,
        other => panic!("expected a text parameter, got {other:?}"),
    }
}

/// Checks that `text`'s placeholders are `dialect`'s and number exactly `params`.
fn check_placeholders(dialect: Dialect, text: &str, params: usize) {
    match dialect {
        Dialect::Mysql | Dialect::Sqlite => {
            assert_eq!(text.matches('?').count(), params, "{text}");
            assert!(!text.contains('$'), "{text}");
        }
        Dialect::Postgres => {
            assert!(!text.contains('?'), "{text}");
            let numbers: Vec<usize> = text
                .split('$')
                .skip(1)
                .map(|s| {
                    let d: String = s.chars().take_while(char::is_ascii_digit).collect();
                    d.parse()
                        .unwrap_or_else(|_| panic!("bad placeholder in {text}"))
                })
                .collect();
            assert_eq!(numbers, (1..=params).collect::<Vec<_>>(), "{text}");
        }
    }
}

#[test]
fn statements_per_request_match_the_counts_for_every_kind_and_option_set() {
    let variants: [fn(&mut OltpConfig); 5] = [
        |_| {},
        |c| c.skip_trx = true,
        |c| c.range_selects = false,
        |c| {
            c.point_selects = 3;
            c.simple_ranges = 2;
            c.sum_ranges = 0;
            c.order_ranges = 4;
            c.distinct_ranges = 1;
            c.index_updates = 5;
            c.non_index_updates = 0;
            c.delete_inserts = 3;
        },
        |c| c.tables = 4,
    ];
    for kind in OltpKind::ALL {
        for variant in variants {
            let mut c = config(kind, Dialect::Mysql);
            variant(&mut c);
            let oltp = Oltp::new(c.clone()).unwrap();
            let counts = oltp.statement_counts();
            for r in requests(oltp.source(0, 1).as_mut(), 50) {
                assert_eq!(r.kind, 0);
                assert_eq!(r.statements.len() as u64, counts.statements(), "{c:?}");
                assert_eq!(r.transaction, counts.other == 2, "{c:?}");
                let reads = r
                    .statements
                    .iter()
                    .filter(|s| s.text.starts_with("SELECT"))
                    .count() as u64;
                assert_eq!(reads, counts.reads, "{c:?}");
            }
        }
    }
    let rw = statement_counts(&config(OltpKind::ReadWrite, Dialect::Mysql));
    assert_eq!(
        rw,
        StatementCounts {
            reads: 14,
            writes: 4,
            other: 2
        }
    );
    assert_eq!((rw.statements(), rw.queries()), (18, 20));
    let ro = statement_counts(&config(OltpKind::ReadOnly, Dialect::Mysql));
    assert_eq!(
        (ro.reads, ro.writes, ro.other, ro.queries()),
        (14, 0, 2, 16)
    );
    let ps = statement_counts(&config(OltpKind::PointSelect, Dialect::Mysql));
    assert_eq!((ps.reads, ps.writes, ps.other), (1, 0, 0));
    let ins = statement_counts(&config(OltpKind::Insert, Dialect::Mysql));
    assert_eq!((ins.reads, ins.writes, ins.other), (0, 1, 0));
}

#[test]
fn read_write_runs_sysbench_statements_in_sysbench_order() {
    let oltp = Oltp::new(config(OltpKind::ReadWrite, Dialect::Mysql)).unwrap();
    let r = &requests(oltp.source(0, 1).as_mut(), 1)[0];
    let texts: Vec<&str> = r.statements.iter().map(|s| &*s.text).collect();
    let mut expected = vec!["SELECT c FROM sbtest1 WHERE id=?"; 10];
    expected.extend([
        "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?",
        "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?",
        "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
        "UPDATE sbtest1 SET k=k+1 WHERE id=?",
        "UPDATE sbtest1 SET c=? WHERE id=?",
        "DELETE FROM sbtest1 WHERE id=?",
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
    ]);
    assert_eq!(texts, expected);
    // The DELETE and the INSERT are of the same id; c and pad follow the templates.
    let (delete, insert) = (&r.statements[16].params, &r.statements[17].params);
    assert_eq!(int(&delete[0]), int(&insert[0]));
    assert_eq!(text(&insert[2]).len(), 119);
    assert_eq!(text(&insert[3]).len(), 59);
    assert_eq!(text(&r.statements[15].params[0]).len(), 119);
}

#[test]
fn placeholders_match_the_parameters_in_every_dialect() {
    for dialect in Dialect::ALL {
        for kind in OltpKind::ALL {
            let mut c = config(kind, dialect);
            c.tables = 3;
            c.table_size = 500;
            c.load_batch_rows = 70;
            let oltp = Oltp::new(c).unwrap();
            let mut all = oltp.setup();
            all.extend(drain(oltp.load(0, 1).unwrap()));
            all.extend(requests(oltp.source(0, 1).as_mut(), 100));
            for r in &all {
                for s in &r.statements {
                    check_placeholders(dialect, &s.text, s.params.len());
                }
            }
        }
    }
}

#[test]
fn ids_tables_and_ranges_stay_in_bounds() {
    let mut c = config(OltpKind::ReadWrite, Dialect::Postgres);
    c.tables = 4;
    c.table_size = 50;
    c.range_size = 7;
    for rand_type in [RandType::Uniform, RandType::Special] {
        c.rand_type = rand_type;
        let oltp = Oltp::new(c.clone()).unwrap();
        let mut tables = BTreeSet::new();
        for r in requests(oltp.source(2, 4).as_mut(), 500) {
            for s in &r.statements {
                tables.insert(table_of(&s.text));
                let ints: Vec<i64> = s
                    .params
                    .iter()
                    .filter_map(|p| match p {
                        Param::Int(v) => Some(*v),
                        _ => None,
                    })
                    .collect();
                if s.text.contains("BETWEEN") {
                    assert!((1..=50).contains(&ints[0]));
                    assert_eq!(ints[1], ints[0] + 6);
                } else {
                    for v in ints {
                        assert!((1..=50).contains(&v), "{} {v}", s.text);
                    }
                }
            }
        }
        assert_eq!(tables, (1..=4).collect::<BTreeSet<u32>>());
    }
}

#[test]
fn a_statement_group_uses_one_table() {
    let mut c = config(OltpKind::ReadWrite, Dialect::Mysql);
    c.tables = 8;
    let oltp = Oltp::new(c).unwrap();
    let mut mixed = false;
    for r in requests(oltp.source(0, 1).as_mut(), 100) {
        let tables: Vec<u32> = r.statements.iter().map(|s| table_of(&s.text)).collect();
        assert!(tables[..10].iter().all(|t| *t == tables[0]), "{tables:?}");
        assert_eq!(tables[16], tables[17], "DELETE and INSERT hit one table");
        mixed |= tables.iter().any(|t| *t != tables[0]);
    }
    assert!(mixed, "groups pick their tables independently, as sysbench");
}

#[test]
fn requests_are_a_function_of_seed_and_worker() {
    for kind in OltpKind::ALL {
        let mut c = config(kind, Dialect::Sqlite);
        c.tables = 2;
        c.seed = 42;
        let a = Oltp::new(c.clone()).unwrap();
        let b = Oltp::new(c.clone()).unwrap();
        let run = |o: &Oltp, w| requests(o.source(w, 4).as_mut(), 30);
        assert_eq!(run(&a, 1), run(&b, 1));
        assert_ne!(run(&a, 1), run(&a, 2), "workers draw different streams");
        c.seed = 43;
        let other = Oltp::new(c).unwrap();
        assert_ne!(run(&a, 1), run(&other, 1), "another seed, other requests");
    }
}

type Rows = BTreeMap<(u32, i64), (i64, String, String)>;

/// (table, id) -> (k, c, pad) of every row the loaders of `oltp` insert (one after the
/// other), and the texts of the other statements they send (the index).
fn load_all(oltp: &Oltp, workers: usize) -> (Rows, Vec<String>) {
    let mut rows = BTreeMap::new();
    let mut other = Vec::new();
    for w in 0..workers {
        for r in drain(oltp.load(w, workers).unwrap()) {
            assert!(!r.transaction);
            assert_eq!(r.statements.len(), 1);
            let s = &r.statements[0];
            if !s.text.starts_with("INSERT") {
                assert!(s.params.is_empty());
                other.push(s.text.to_string());
                continue;
            }
            let table = table_of(&s.text);
            assert_eq!(s.params.len() % 4, 0);
            let n = s.params.len() / 4;
            assert!(n >= 1 && n <= oltp.config().load_batch_rows as usize);
            for row in s.params.chunks(4) {
                let value = (
                    int(&row[1]),
                    text(&row[2]).to_string(),
                    text(&row[3]).to_string(),
                );
                let old = rows.insert((table, int(&row[0])), value);
                assert!(old.is_none(), "row {table}/{} loaded twice", int(&row[0]));
            }
        }
    }
    (rows, other)
}

fn loaded_rows(oltp: &Oltp, workers: usize) -> Rows {
    let (rows, other) = load_all(oltp, workers);
    assert_eq!(other.len(), oltp.config().tables as usize, "{other:?}");
    rows
}

#[test]
fn loaders_split_every_table_disjointly_and_the_data_does_not_depend_on_their_number() {
    let mut c = config(OltpKind::ReadWrite, Dialect::Mysql);
    c.tables = 3;
    c.table_size = 1_001;
    c.load_batch_rows = 64;
    c.seed = 9;
    let oltp = Oltp::new(c.clone()).unwrap();
    assert_eq!(oltp.load_rows(), 3_003);
    let one = loaded_rows(&oltp, 1);
    let expected: BTreeSet<(u32, i64)> = (1..=3)
        .flat_map(|t| (1..=1_001).map(move |id| (t, id)))
        .collect();
    assert_eq!(one.keys().copied().collect::<BTreeSet<_>>(), expected);
    for workers in [2, 3, 8, 5_000] {
        assert_eq!(loaded_rows(&oltp, workers), one, "{workers} loaders");
    }
    for ((table, id), (k, cv, pad)) in &one {
        assert!((1..=1_001).contains(k));
        let row = load_row(&c, *table, *id as u32);
        assert_eq!((i64::from(row.k), &row.c, &row.pad), (*k, cv, pad));
    }
    // Another seed, other data.
    c.seed = 10;
    assert_ne!(loaded_rows(&Oltp::new(c).unwrap(), 1), one);
}

#[test]
fn setup_drops_and_creates_every_table_and_the_index_goes_where_asked() {
    let mut c = config(OltpKind::ReadWrite, Dialect::Postgres);
    c.tables = 2;
    c.table_size = 100;
    let oltp = Oltp::new(c.clone()).unwrap();
    let texts = |rs: Vec<QueryRequest>| -> Vec<String> {
        rs.into_iter()
            .flat_map(|r| {
                assert!(!r.transaction);
                r.statements.into_iter().map(|s| s.text.to_string())
            })
            .collect()
    };
    let setup = texts(oltp.setup());
    assert_eq!(setup.len(), 6);
    assert_eq!(setup[0], "DROP TABLE IF EXISTS sbtest1");
    assert!(setup[1].starts_with("CREATE TABLE sbtest1(id SERIAL"));
    assert!(setup[2].starts_with("SELECT setval("));
    assert!(!setup.iter().any(|t| t.contains("INDEX")));
    assert_eq!(
        load_all(&oltp, 3).1,
        [
            "CREATE INDEX k_1 ON sbtest1(k)",
            "CREATE INDEX k_2 ON sbtest2(k)"
        ]
    );

    c.secondary_index = SecondaryIndex::BeforeLoad;
    let oltp = Oltp::new(c.clone()).unwrap();
    let setup = texts(oltp.setup());
    assert_eq!(setup[3], "CREATE INDEX k_1 ON sbtest1(k)");
    assert!(load_all(&oltp, 3).1.is_empty());

    c.secondary_index = SecondaryIndex::Off;
    c.dialect = Dialect::Mysql;
    let oltp = Oltp::new(c).unwrap();
    assert_eq!(texts(oltp.setup()).len(), 4);
    assert!(load_all(&oltp, 3).1.is_empty());
}

#[test]
fn the_index_comes_once_from_the_loader_that_finishes_last() {
    let mut c = config(OltpKind::ReadWrite, Dialect::Sqlite);
    c.tables = 3;
    c.table_size = 100;
    c.load_batch_rows = 10;
    let oltp = Oltp::new(c).unwrap();
    for round in 0..2 {
        // Three loaders of 100 rows (10 batches) each, interleaved.
        let mut sources: Vec<_> = (0..3).map(|w| oltp.load(w, 3).unwrap()).collect();
        let mut done = [false; 3];
        let mut index = Vec::new();
        let mut step = 0;
        while done.iter().any(|d| !d) {
            for (w, source) in sources.iter_mut().enumerate() {
                // Loader 1 moves every third step only: it finishes last.
                if done[w] || (w == 1 && step % 3 != 0) {
                    continue;
                }
                let mut r = QueryRequest::default();
                if !source.next(&mut r) {
                    done[w] = true;
                    continue;
                }
                let text = &r.statements[0].text;
                if text.starts_with("CREATE INDEX") {
                    assert_eq!(w, 1, "round {round}: only the last loader sends the index");
                    assert!(done[0] && done[2], "round {round}: the others are done");
                    index.push(text.clone());
                }
            }
            step += 1;
        }
        assert_eq!(index.len(), 3, "round {round}: {index:?}");
    }
}

#[test]
fn insert_leaves_the_id_to_the_database() {
    let oltp = Oltp::new(config(OltpKind::Insert, Dialect::Postgres)).unwrap();
    for r in requests(oltp.source(0, 1).as_mut(), 20) {
        assert!(!r.transaction);
        let s = &r.statements[0];
        assert_eq!(
            &*s.text,
            "INSERT INTO sbtest1 (k, c, pad) VALUES ($1, $2, $3)"
        );
        assert!((1..=10_000).contains(&int(&s.params[0])));
        assert_eq!(text(&s.params[1]).len(), 119);
        assert_eq!(text(&s.params[2]).len(), 59);
    }
}

#[test]
fn special_rand_type_concentrates_ids_like_sysbench_1_0() {
    let mut c = config(OltpKind::PointSelect, Dialect::Mysql);
    c.rand_type = RandType::Special;
    let oltp = Oltp::new(c).unwrap();
    let ids: Vec<i64> = requests(oltp.source(0, 1).as_mut(), 4_000)
        .iter()
        .map(|r| int(&r.statements[0].params[0]))
        .collect();
    let hot = ids
        .iter()
        .filter(|id| (4_900..=5_100).contains(*id))
        .count();
    assert!(hot > 2_800, "{hot} of 4000 in the middle 2%");
    // sysbench's band: ids 1 + [t/2 - t/200, t/2 + t/200), t = 9,999 (100 values: 4,951
    // to 5,050), every one of them hit, none of the band's neighbours more than the bell.
    let band: std::collections::BTreeSet<i64> = ids
        .iter()
        .copied()
        .filter(|id| (4_951..=5_050).contains(id))
        .collect();
    assert!(
        band.len() >= 98,
        "{} of the 100 band values hit",
        band.len()
    );
    let in_band = ids
        .iter()
        .filter(|id| (4_951..=5_050).contains(*id))
        .count();
    assert!(in_band > 2_800, "{in_band} of 4000 in the band itself");
}

#[test]
fn bad_options_name_the_option_the_value_and_what_is_allowed() {
    let base = config(OltpKind::ReadWrite, Dialect::Sqlite);
    let err = |f: fn(&mut OltpConfig)| {
        let mut c = base.clone();
        f(&mut c);
        Oltp::new(c).unwrap_err()
    };
    assert_eq!(
        err(|c| c.tables = 0),
        OltpError::OutOfRange {
            option: "tables",
            value: 0,
            allowed: "1 to 100000".into()
        }
    );
    assert_eq!(
        err(|c| c.table_size = 0).to_string(),
        "option `table_size`: value 0 is out of range; allowed: 1 to 2147483647"
    );
    assert_eq!(err(|c| c.table_size = u32::MAX).option(), "table_size");
    assert_eq!(err(|c| c.range_size = 0).option(), "range_size");
    assert_eq!(err(|c| c.point_selects = 100_001).option(), "point_selects");
    assert_eq!(
        err(|c| c.delete_inserts = 200_000).option(),
        "delete_inserts"
    );
    assert_eq!(
        err(|c| c.load_batch_rows = 8_192).to_string(),
        "option `load_batch_rows`: value 8192 is out of range; allowed: 1 to 8191 \
         (8191 rows x 4 parameters stay under sqlite's 32766 bind parameters)"
    );
    assert_eq!(err(|c| c.load_batch_rows = 0).option(), "load_batch_rows");
    let mut pg = base.clone();
    pg.dialect = Dialect::Postgres;
    pg.load_batch_rows = 16_383;
    assert!(Oltp::new(pg.clone()).is_ok());
    pg.load_batch_rows = 16_384;
    assert_eq!(Oltp::new(pg).unwrap_err().option(), "load_batch_rows");
    assert_eq!(
        err(|c| c.mysql_storage_engine = "innodb; DROP".into()).to_string(),
        "option `mysql_storage_engine`: value `innodb; DROP` is not allowed; allowed: an \
         engine name of 1 to 64 letters, digits and underscores (e.g. innodb, myisam, rocksdb)"
    );
    assert_eq!(
        err(|c| c.mysql_storage_engine = String::new()).option(),
        "mysql_storage_engine"
    );

    let mut empty = config(OltpKind::ReadOnly, Dialect::Mysql);
    empty.point_selects = 0;
    empty.range_selects = false;
    let e = Oltp::new(empty.clone()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "oltp_read_only would run no statement per transaction; allowed: at least one of \
         point_selects (range_selects is false) above 0"
    );
    empty.kind = OltpKind::ReadWrite;
    empty.index_updates = 0;
    empty.non_index_updates = 0;
    empty.delete_inserts = 0;
    assert!(matches!(
        Oltp::new(empty.clone()),
        Err(OltpError::EmptyTransaction { .. })
    ));
    empty.delete_inserts = 1;
    assert!(Oltp::new(empty.clone()).is_ok());
    // point_select and insert always run one statement.
    empty.kind = OltpKind::PointSelect;
    empty.delete_inserts = 0;
    assert!(Oltp::new(empty).is_ok());

    assert_eq!(
        "oltp_update".parse::<OltpKind>().unwrap_err().to_string(),
        "option `kind`: unknown value `oltp_update`; allowed: oltp_read_write, \
         oltp_read_only, oltp_point_select, oltp_insert"
    );
    assert_eq!(
        "oracle".parse::<Dialect>().unwrap_err().to_string(),
        "option `dialect`: unknown value `oracle`; allowed: mysql, postgres, sqlite"
    );
    assert_eq!(
        "pareto".parse::<RandType>().unwrap_err().option(),
        "rand_type"
    );
    assert_eq!(
        "later".parse::<SecondaryIndex>().unwrap_err().option(),
        "secondary_index"
    );
    for kind in OltpKind::ALL {
        assert_eq!(kind.name().parse::<OltpKind>().unwrap(), kind);
    }
    for dialect in Dialect::ALL {
        assert_eq!(dialect.name().parse::<Dialect>().unwrap(), dialect);
    }
    assert_eq!("special".parse::<RandType>().unwrap(), RandType::Special);
    assert_eq!(
        "before_load".parse::<SecondaryIndex>().unwrap(),
        SecondaryIndex::BeforeLoad
    );
}

#[test]
fn each_kind_lists_the_options_it_reads() {
    assert_eq!(OltpKind::ReadWrite.options().len(), 18);
    assert!(OltpKind::ReadOnly.options().contains(&"skip_trx"));
    assert!(!OltpKind::ReadOnly.options().contains(&"index_updates"));
    assert!(!OltpKind::PointSelect.options().contains(&"point_selects"));
    assert!(OltpKind::Insert.options().contains(&"table_size"));
}
