//! The statement texts, per dialect: sysbench's DDL for `sbtestN`, its nine prepared
//! statements, and the multi-row INSERT of the load. Texts are written once with `?`
//! placeholders and numbered `$1..$n` for PostgreSQL.

use std::fmt::Write as _;
use std::sync::Arc;

use tsload_core::{QueryRequest, Statement};

use crate::config::{Dialect, OltpConfig};

/// `sbtest{table}`.
pub(crate) fn table_name(table: u32) -> String {
    format!("sbtest{table}")
}

/// `text` with its `?` placeholders in `dialect`'s form (the texts hold no other `?`).
pub(crate) fn numbered(dialect: Dialect, text: &str) -> String {
    match dialect {
        Dialect::Mysql | Dialect::Sqlite => text.to_string(),
        Dialect::Postgres => {
            let mut out = String::with_capacity(text.len() + text.len() / 8);
            let mut n = 0;
            for ch in text.chars() {
                if ch == '?' {
                    n += 1;
                    let _ = write!(out, "${n}");
                } else {
                    out.push(ch);
                }
            }
            out
        }
    }
}

/// `DROP TABLE IF EXISTS sbtestN`.
pub(crate) fn drop_table(table: u32) -> String {
    format!("DROP TABLE IF EXISTS {}", table_name(table))
}

/// sysbench's `CREATE TABLE sbtestN`: id (auto-increment), k, c, pad, primary key id.
pub(crate) fn create_table(config: &OltpConfig, table: u32) -> String {
    let (id, options) = match config.dialect {
        Dialect::Mysql => (
            "INTEGER NOT NULL AUTO_INCREMENT",
            format!(" /*! ENGINE = {} */", config.mysql_storage_engine),
        ),
        Dialect::Postgres => ("SERIAL", String::new()),
        // `INTEGER` + single-column primary key = SQLite's rowid, which numbers rows
        // inserted without an id after the largest one.
        Dialect::Sqlite => ("INTEGER NOT NULL", String::new()),
    };
    format!(
        "CREATE TABLE {}(id {id}, k INTEGER DEFAULT '0' NOT NULL, \
         c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, \
         PRIMARY KEY (id)){options}",
        table_name(table)
    )
}

/// PostgreSQL only: makes the id sequence continue after the ids the load inserts
/// explicitly (1..=table_size), so `oltp_insert` never collides with loaded rows.
/// MySQL's AUTO_INCREMENT and SQLite's rowid follow the largest id by themselves.
pub(crate) fn restart_sequence(config: &OltpConfig, table: u32) -> Option<String> {
    (config.dialect == Dialect::Postgres).then(|| {
        format!(
            "SELECT setval(pg_get_serial_sequence('{}', 'id'), {}, false)",
            table_name(table),
            u64::from(config.table_size) + 1
        )
    })
}

/// `CREATE INDEX k_N ON sbtestN(k)`.
pub(crate) fn create_index(table: u32) -> String {
    format!("CREATE INDEX k_{table} ON {}(k)", table_name(table))
}

/// A request of DDL statements, outside an explicit transaction.
pub(crate) fn ddl(texts: Vec<String>) -> QueryRequest {
    QueryRequest {
        kind: 0,
        statements: texts.into_iter().map(Statement::new).collect(),
        transaction: false,
        ..Default::default()
    }
}

/// One `CREATE INDEX k_N` request per table, in table order.
pub(crate) fn index_requests(config: &OltpConfig) -> Vec<QueryRequest> {
    (1..=config.tables)
        .map(|t| ddl(vec![create_index(t)]))
        .collect()
}

/// The multi-row INSERT of `rows` loaded rows (4 parameters each: id, k, c, pad).
pub(crate) fn load_insert(dialect: Dialect, table: u32, rows: usize) -> String {
    let mut text = format!("INSERT INTO {}(id, k, c, pad) VALUES ", table_name(table));
    text.reserve(rows * 16);
    let mut n = 0;
    for r in 0..rows {
        if r > 0 {
            text.push_str(", ");
        }
        text.push('(');
        for p in 0..4 {
            if p > 0 {
                text.push_str(", ");
            }
            match dialect {
                Dialect::Mysql | Dialect::Sqlite => text.push('?'),
                Dialect::Postgres => {
                    n += 1;
                    let _ = write!(text, "${n}");
                }
            }
        }
        text.push(')');
    }
    text
}

/// The texts of one table's statements, made once per run source: each worker's source
/// holds its own, so the reference counts its requests touch are the worker's alone (a
/// count shared by workers on other threads would move between cores on every request).
#[derive(Debug, Clone)]
pub(crate) struct TableStatements {
    /// `SELECT c ... WHERE id=?`
    pub(crate) point_select: Arc<str>,
    /// `SELECT c ... WHERE id BETWEEN ? AND ?`
    pub(crate) simple_range: Arc<str>,
    /// `SELECT SUM(k) ... BETWEEN ? AND ?`
    pub(crate) sum_range: Arc<str>,
    /// `SELECT c ... BETWEEN ? AND ? ORDER BY c`
    pub(crate) order_range: Arc<str>,
    /// `SELECT DISTINCT c ... BETWEEN ? AND ? ORDER BY c`
    pub(crate) distinct_range: Arc<str>,
    /// `UPDATE ... SET k=k+1 WHERE id=?`
    pub(crate) index_update: Arc<str>,
    /// `UPDATE ... SET c=? WHERE id=?`
    pub(crate) non_index_update: Arc<str>,
    /// `DELETE ... WHERE id=?`
    pub(crate) delete: Arc<str>,
    /// `INSERT ... (id, k, c, pad) VALUES (?, ?, ?, ?)`
    pub(crate) insert: Arc<str>,
    /// `oltp_insert`'s `INSERT ... (k, c, pad) VALUES (?, ?, ?)`: the id comes from the
    /// table's auto-increment (sysbench sends id 0 to MySQL, which means the same, and
    /// leaves it out for PostgreSQL).
    pub(crate) insert_auto_id: Arc<str>,
}

impl TableStatements {
    pub(crate) fn new(dialect: Dialect, table: u32) -> Self {
        let t = table_name(table);
        let s = |text: String| Arc::<str>::from(numbered(dialect, &text));
        TableStatements {
            point_select: s(format!("SELECT c FROM {t} WHERE id=?")),
            simple_range: s(format!("SELECT c FROM {t} WHERE id BETWEEN ? AND ?")),
            sum_range: s(format!("SELECT SUM(k) FROM {t} WHERE id BETWEEN ? AND ?")),
            order_range: s(format!(
                "SELECT c FROM {t} WHERE id BETWEEN ? AND ? ORDER BY c"
            )),
            distinct_range: s(format!(
                "SELECT DISTINCT c FROM {t} WHERE id BETWEEN ? AND ? ORDER BY c"
            )),
            index_update: s(format!("UPDATE {t} SET k=k+1 WHERE id=?")),
            non_index_update: s(format!("UPDATE {t} SET c=? WHERE id=?")),
            delete: s(format!("DELETE FROM {t} WHERE id=?")),
            insert: s(format!(
                "INSERT INTO {t} (id, k, c, pad) VALUES (?, ?, ?, ?)"
            )),
            insert_auto_id: s(format!("INSERT INTO {t} (k, c, pad) VALUES (?, ?, ?)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::OltpKind;

    #[test]
    fn postgres_placeholders_are_numbered_in_order() {
        assert_eq!(
            numbered(Dialect::Postgres, "UPDATE t SET c=? WHERE id=?"),
            "UPDATE t SET c=$1 WHERE id=$2"
        );
        assert_eq!(numbered(Dialect::Mysql, "a=? b=?"), "a=? b=?");
        assert_eq!(
            load_insert(Dialect::Postgres, 2, 2),
            "INSERT INTO sbtest2(id, k, c, pad) VALUES ($1, $2, $3, $4), ($5, $6, $7, $8)"
        );
        assert_eq!(
            load_insert(Dialect::Sqlite, 1, 1),
            "INSERT INTO sbtest1(id, k, c, pad) VALUES (?, ?, ?, ?)"
        );
    }

    #[test]
    fn ddl_follows_sysbench_per_dialect() {
        let mut c = OltpConfig::new(OltpKind::ReadWrite, Dialect::Mysql);
        assert_eq!(
            create_table(&c, 3),
            "CREATE TABLE sbtest3(id INTEGER NOT NULL AUTO_INCREMENT, \
             k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, \
             pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) /*! ENGINE = innodb */"
        );
        assert_eq!(restart_sequence(&c, 3), None);
        c.dialect = Dialect::Postgres;
        assert!(create_table(&c, 1).starts_with("CREATE TABLE sbtest1(id SERIAL, "));
        assert_eq!(
            restart_sequence(&c, 1).as_deref(),
            Some("SELECT setval(pg_get_serial_sequence('sbtest1', 'id'), 10001, false)")
        );
        c.dialect = Dialect::Sqlite;
        assert!(create_table(&c, 1).ends_with("PRIMARY KEY (id))"));
        assert_eq!(create_index(4), "CREATE INDEX k_4 ON sbtest4(k)");
        assert_eq!(drop_table(4), "DROP TABLE IF EXISTS sbtest4");
    }
}
