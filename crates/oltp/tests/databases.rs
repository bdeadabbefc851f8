//! The OLTP workload's SQL against real databases: MariaDB 10.11 and PostgreSQL 15 from
//! the testbed and SQLite in a temp file. Each test runs setup, a parallel load, the
//! post-load index, and a few hundred requests of every kind, executing the statements
//! with sqlx directly (parameters bound in order, BEGIN/COMMIT around transactions), and
//! checks what the tables hold.

use sqlx::{Connection as _, Executor as _, MySqlConnection, PgConnection, SqliteConnection};
use std::future::Future;

use tsload_core::{Param, QueryRequest, QueryWorkload as _};
use tsload_oltp::{Dialect, Oltp, OltpConfig, OltpKind, RandType, load_row};
use tsload_testbed::{Server, ServerKind};

const TABLES: u32 = 2;
const TABLE_SIZE: u32 = 3_000;
const LOADERS: usize = 3;
const REQUESTS: usize = 300;

/// What one statement returned: result rows for SELECTs, affected rows otherwise.
type Counts = Vec<u64>;

/// Defines `$name(conn, request)`: runs `request` the way a target's executor does.
/// Statements without parameters go as plain text (DDL), the others prepared.
macro_rules! executor {
    ($name:ident, $conn:ty) => {
        async fn $name(conn: &mut $conn, request: &QueryRequest) -> Result<Counts, String> {
            if request.transaction {
                conn.execute(sqlx::raw_sql("BEGIN"))
                    .await
                    .map_err(|e| format!("BEGIN: {e}"))?;
            }
            let mut counts = Vec::with_capacity(request.statements.len());
            for s in &request.statements {
                let fail = |e: sqlx::Error| format!("{}: {e}", s.text);
                let select = s.text.starts_with("SELECT");
                let n = if s.params.is_empty() {
                    let q = sqlx::raw_sql(&s.text);
                    if select {
                        conn.fetch_all(q).await.map_err(fail)?.len() as u64
                    } else {
                        conn.execute(q).await.map_err(fail)?.rows_affected()
                    }
                } else {
                    let mut q = sqlx::query(&s.text);
                    for p in &s.params {
                        q = match p {
                            Param::Int(v) => q.bind(*v),
                            Param::Float(v) => q.bind(*v),
                            Param::Text(v) => q.bind(v.as_str()),
                        };
                    }
                    if select {
                        q.fetch_all(&mut *conn).await.map_err(fail)?.len() as u64
                    } else {
                        q.execute(&mut *conn).await.map_err(fail)?.rows_affected()
                    }
                };
                counts.push(n);
            }
            if request.transaction {
                conn.execute(sqlx::raw_sql("COMMIT"))
                    .await
                    .map_err(|e| format!("COMMIT: {e}"))?;
            }
            Ok(counts)
        }
    };
}

executor!(run_mysql, MySqlConnection);
executor!(run_postgres, PgConnection);
executor!(run_sqlite, SqliteConnection);

/// One database under test: how to connect and run a request, and its catalog query for
/// an index.
trait Db: Sized + Send + 'static {
    fn open(url: &str) -> impl Future<Output = Self> + Send;
    fn run(
        &mut self,
        request: &QueryRequest,
    ) -> impl Future<Output = Result<Counts, String>> + Send;
    fn index_query(name: &str) -> String;

    /// One integer from `sql` (a count).
    fn scalar(&mut self, sql: &str) -> impl Future<Output = i64> + Send;

    /// `k`, `c` and `pad` of one row, trailing blanks removed (PostgreSQL pads CHAR(n)).
    fn row(&mut self, table: u32, id: u32) -> impl Future<Output = (i64, String, String)> + Send;
}

/// Runs `request`; a failure fails the test.
async fn must<D: Db>(db: &mut D, request: &QueryRequest) -> Counts {
    db.run(request)
        .await
        .unwrap_or_else(|e| panic!("request failed: {e}"))
}

struct Mysql(MySqlConnection);
struct Postgres(PgConnection);
struct Sqlite(SqliteConnection);

macro_rules! db_impl {
    ($ty:ident, $conn:ty, $run:ident, $scalar:expr, $index:expr, $row_sql:expr) => {
        impl Db for $ty {
            async fn open(url: &str) -> Self {
                $ty(<$conn>::connect(url)
                    .await
                    .unwrap_or_else(|e| panic!("connect {url}: {e}")))
            }
            async fn run(&mut self, request: &QueryRequest) -> Result<Counts, String> {
                $run(&mut self.0, request).await
            }
            fn index_query(name: &str) -> String {
                format!($index, name)
            }
            async fn scalar(&mut self, sql: &str) -> i64 {
                let sql = format!($scalar, sql);
                sqlx::query_scalar::<_, i64>(&sql)
                    .fetch_one(&mut self.0)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"))
            }
            async fn row(&mut self, table: u32, id: u32) -> (i64, String, String) {
                let sql = format!($row_sql, table, id);
                let (k, c, pad): (i64, String, String) = sqlx::query_as(&sql)
                    .fetch_one(&mut self.0)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                (k, c.trim_end().to_string(), pad.trim_end().to_string())
            }
        }
    };
}

db_impl!(
    Mysql,
    MySqlConnection,
    run_mysql,
    "{}",
    "SELECT COUNT(*) FROM information_schema.statistics \
     WHERE table_schema = DATABASE() AND index_name = '{}'",
    "SELECT CAST(k AS SIGNED), c, pad FROM sbtest{} WHERE id = {}"
);
db_impl!(
    Postgres,
    PgConnection,
    run_postgres,
    // Counts are bigint, MIN(id) and MAX(id) integer: one type for all.
    "SELECT ({})::bigint",
    "SELECT COUNT(*) FROM pg_indexes WHERE indexname = '{}'",
    "SELECT k::bigint, c::text, pad::text FROM sbtest{} WHERE id = {}"
);
db_impl!(
    Sqlite,
    SqliteConnection,
    run_sqlite,
    "{}",
    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = '{}'",
    "SELECT k, c, pad FROM sbtest{} WHERE id = {}"
);

fn oltp(kind: OltpKind, dialect: Dialect, rand_type: RandType) -> Oltp {
    let mut c = OltpConfig::new(kind, dialect);
    c.tables = TABLES;
    c.table_size = TABLE_SIZE;
    c.load_batch_rows = 700;
    c.rand_type = rand_type;
    c.seed = 5;
    Oltp::new(c).unwrap()
}

async fn total_rows<D: Db>(db: &mut D) -> i64 {
    let mut n = 0;
    for t in 1..=TABLES {
        n += db.scalar(&format!("SELECT COUNT(*) FROM sbtest{t}")).await;
    }
    n
}

/// Setup and a load by `LOADERS` loaders (in parallel when `parallel`, each on its own
/// connection; the last one to finish creates the index); checks the loaded rows.
async fn prepare<D: Db>(url: &str, oltp: &Oltp, parallel: bool) -> D {
    let mut db = D::open(url).await;
    for r in oltp.setup() {
        must(&mut db, &r).await;
    }
    if parallel {
        let mut tasks = Vec::new();
        for w in 0..LOADERS {
            let mut source = oltp.load(w, LOADERS).expect("the workload loads data");
            let url = url.to_string();
            tasks.push(tokio::spawn(async move {
                let mut db = D::open(&url).await;
                let mut r = QueryRequest::default();
                while source.next(&mut r) {
                    let counts = must(&mut db, &r).await;
                    if r.statements[0].text.starts_with("INSERT") {
                        assert_eq!(counts[0] as usize, r.statements[0].params.len() / 4);
                    }
                    r.clear();
                }
            }));
        }
        for t in tasks {
            t.await.expect("a loader failed");
        }
    } else {
        for w in 0..LOADERS {
            let mut source = oltp.load(w, LOADERS).expect("the workload loads data");
            let mut r = QueryRequest::default();
            while source.next(&mut r) {
                must(&mut db, &r).await;
                r.clear();
            }
        }
    }
    for t in 1..=TABLES {
        assert_eq!(
            db.scalar(&format!("SELECT COUNT(*) FROM sbtest{t}")).await,
            i64::from(TABLE_SIZE),
            "rows in sbtest{t} after the load"
        );
        assert_eq!(
            db.scalar(&format!("SELECT MIN(id) FROM sbtest{t}")).await,
            1
        );
        assert_eq!(
            db.scalar(&format!("SELECT MAX(id) FROM sbtest{t}")).await,
            i64::from(TABLE_SIZE)
        );
        assert_eq!(db.scalar(&D::index_query(&format!("k_{t}"))).await, 1);
        for id in [1, 1_500, TABLE_SIZE] {
            let expected = load_row(oltp.config(), t, id);
            assert_eq!(
                db.row(t, id).await,
                (i64::from(expected.k), expected.c, expected.pad),
                "sbtest{t} id {id}"
            );
        }
    }
    db
}

/// Every kind, on one database: setup + load, then `REQUESTS` requests, checking the
/// rows each statement touched and the row count after.
async fn every_kind<D: Db>(url: &str, dialect: Dialect, parallel: bool) {
    for kind in OltpKind::ALL {
        let rand_type = if kind == OltpKind::ReadWrite {
            RandType::Special
        } else {
            RandType::Uniform
        };
        let oltp = oltp(kind, dialect, rand_type);
        let mut db: D = prepare(url, &oltp, parallel).await;
        let before = total_rows(&mut db).await;
        let counts = oltp.statement_counts();
        let mut source = oltp.source(0, 1);
        let mut r = QueryRequest::default();
        for _ in 0..REQUESTS {
            assert!(source.next(&mut r));
            let rows = must(&mut db, &r).await;
            assert_eq!(rows.len() as u64, counts.statements());
            for (s, n) in r.statements.iter().zip(&rows) {
                let expected = if s.text.starts_with("SELECT c FROM sbtest1 WHERE id=")
                    || s.text.starts_with("SELECT c FROM sbtest2 WHERE id=")
                    || s.text.starts_with("SELECT SUM")
                    || !s.text.starts_with("SELECT")
                {
                    // Point selects and SUM return one row; every write hits one row.
                    Some(1)
                } else {
                    None
                };
                if let Some(e) = expected {
                    assert_eq!(*n, e, "{kind}: {} {:?}", s.text, s.params);
                } else {
                    assert!(*n >= 1, "{kind}: a range finds rows: {}", s.text);
                }
            }
            r.clear();
        }
        let after = total_rows(&mut db).await;
        let grown = if kind == OltpKind::Insert {
            REQUESTS as i64
        } else {
            0
        };
        assert_eq!(
            after,
            before + grown,
            "{kind}: rows after {REQUESTS} requests"
        );
        if kind == OltpKind::Insert {
            // The inserted ids continue after the loaded ones.
            let new = db
                .scalar(&format!(
                    "SELECT COUNT(*) FROM sbtest1 WHERE id > {TABLE_SIZE}"
                ))
                .await
                + db.scalar(&format!(
                    "SELECT COUNT(*) FROM sbtest2 WHERE id > {TABLE_SIZE}"
                ))
                .await;
            assert_eq!(new, REQUESTS as i64);
        }
    }
}

fn start(kind: ServerKind) -> (Server, String) {
    let server = Server::start(kind).unwrap_or_else(|e| panic!("{kind:?} did not start: {e}"));
    let url = server.database_url().expect("a SQL server has a URL");
    (server, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_loads_and_runs_every_kind() {
    let (_server, url) = start(ServerKind::MariaDb);
    every_kind::<Mysql>(&url, Dialect::Mysql, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_loads_and_runs_every_kind() {
    let (_server, url) = start(ServerKind::Postgres);
    every_kind::<Postgres>(&url, Dialect::Postgres, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_loads_and_runs_every_kind() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("oltp.db").display());
    every_kind::<Sqlite>(&url, Dialect::Sqlite, false).await;
}

/// Runs Debian's sysbench 1.0.20 (`cargo xtask test` installs it) with its own prepare
/// against a testbed MariaDB and PostgreSQL, printing the command lines and reports of a
/// side-by-side comparison. A measurement to read, not a check: the check that sysbench
/// runs on tsload's tables with the same statement mix is in crates/cli/tests/query.rs.
#[test]
#[ignore = "a side-by-side measurement to read: run with --ignored --nocapture"]
fn sysbench_runs_against_the_testbed_servers() {
    use std::process::Command;

    let sysbench = |args: &[String]| {
        let out = Command::new("sysbench")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("sysbench: {e} (apt-get install sysbench)"));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!("$ sysbench {}\n{text}", args.join(" "));
        assert!(out.status.success(), "sysbench failed: {text}");
        text
    };
    for kind in [ServerKind::MariaDb, ServerKind::Postgres] {
        let (server, _url) = start(kind);
        let addr = server.addr();
        let connection: Vec<String> = match kind {
            ServerKind::MariaDb => vec![
                "--db-driver=mysql".into(),
                format!("--mysql-host={}", addr.ip()),
                format!("--mysql-port={}", addr.port()),
                "--mysql-user=root".into(),
                "--mysql-db=tsload".into(),
            ],
            _ => vec![
                "--db-driver=pgsql".into(),
                format!("--pgsql-host={}", addr.ip()),
                format!("--pgsql-port={}", addr.port()),
                "--pgsql-user=tsload".into(),
                "--pgsql-db=tsload".into(),
            ],
        };
        let common = [
            "--tables=2".to_string(),
            "--table-size=10000".to_string(),
            "--rand-type=uniform".to_string(),
        ];
        let with = |test: &str, extra: &[&str], command: &str| -> Vec<String> {
            let mut a = vec![test.to_string()];
            a.extend(connection.iter().cloned());
            a.extend(common.iter().cloned());
            a.extend(extra.iter().map(|s| s.to_string()));
            a.push(command.to_string());
            a
        };
        sysbench(&with("oltp_read_write", &[], "prepare"));
        let run = sysbench(&with(
            "oltp_read_write",
            &["--threads=2", "--time=3", "--report-interval=1"],
            "run",
        ));
        assert!(run.contains("transactions:"), "{run}");
        sysbench(&with("oltp_read_write", &[], "cleanup"));
    }
}
