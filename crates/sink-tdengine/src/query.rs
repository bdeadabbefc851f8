//! The read side of the TDengine target: [`TdengineQueryTarget`] opens one WebSocket
//! session per worker from the sink's [`TdengineConfig`] (same DSN, database and
//! `request_timeout`), and [`TdengineQueryConn`] runs a request's statements as SQL,
//! reading every result block and counting its rows. A session lost with an error is
//! opened again by the next request.
//!
//! TDengine has no transactions, and its SQL takes no bind parameters outside the
//! statement API's INSERTs: requests that ask for either are rejected before anything is
//! sent.

use std::fmt;
use std::sync::Arc;

use futures_util::TryStreamExt as _;
use taos::{AsyncFetchable as _, AsyncQueryable as _, AsyncTBuilder as _, Taos};
use tsload_core::{
    ErrorKind, QueryAck, QueryConn, QueryRequest, QueryTarget, SinkError, Statement,
};

use crate::conn::{self, Shared, guarded};
use crate::{InsertMode, TdengineConfig, TdengineSink};

/// The TDengine read target.
pub struct TdengineQueryTarget {
    shared: Arc<Shared>,
}

impl fmt::Debug for TdengineQueryTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TdengineQueryTarget")
            .field("dsn", &self.shared.shown)
            .finish_non_exhaustive()
    }
}

impl TdengineQueryTarget {
    /// Checks `cfg` as [`TdengineSink::new`] does (the DSN, the database, the option
    /// ranges; the insert mode does not matter for reads), without connecting. A bad DSN
    /// is an [`ErrorKind::Connection`] error showing it with its password hidden.
    pub fn new(cfg: &TdengineConfig) -> Result<Self, SinkError> {
        let cfg = TdengineConfig {
            mode: InsertMode::Sql,
            ..cfg.clone()
        };
        let sink = TdengineSink::new(cfg)?;
        Ok(TdengineQueryTarget {
            shared: sink.shared,
        })
    }
}

impl QueryTarget for TdengineQueryTarget {
    type Conn = TdengineQueryConn;

    async fn connect(&self, worker: usize) -> Result<TdengineQueryConn, SinkError> {
        let taos = conn::open(&self.shared, &format!("worker {worker}: connecting")).await?;
        Ok(TdengineQueryConn {
            shared: self.shared.clone(),
            taos: Some(taos),
            req_id: ((worker as u64) << 40) | (1 << 39),
        })
    }
}

/// One worker's TDengine session for reads.
pub struct TdengineQueryConn {
    shared: Arc<Shared>,
    /// `None` after a failure that may have broken the session; the next request reopens.
    taos: Option<Taos>,
    req_id: u64,
}

impl fmt::Debug for TdengineQueryConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TdengineQueryConn")
            .field("dsn", &self.shared.shown)
            .field("connected", &self.taos.is_some())
            .finish_non_exhaustive()
    }
}

impl QueryConn for TdengineQueryConn {
    async fn execute(&mut self, request: &QueryRequest) -> Result<QueryAck, SinkError> {
        check_request(request)?;
        let mut ack = QueryAck::default();
        for (i, statement) in request.statements.iter().enumerate() {
            match self.run(statement, i).await {
                Ok(rows) => ack.rows += rows,
                Err(e) => {
                    if matches!(
                        e.kind,
                        ErrorKind::Connection | ErrorKind::Timeout | ErrorKind::Other
                    ) {
                        self.taos = None;
                    }
                    return Err(e);
                }
            }
            ack.statements += 1;
        }
        Ok(ack)
    }
}

/// Refuses what TDengine cannot do: transactions and bind parameters in queries.
fn check_request(request: &QueryRequest) -> Result<(), SinkError> {
    if request.transaction {
        return Err(SinkError::new(
            ErrorKind::Rejected,
            "TDengine has no transactions: run these statements without `transaction`",
        ));
    }
    if let Some((i, statement)) = request
        .statements
        .iter()
        .enumerate()
        .find(|(_, s)| !s.params.is_empty())
    {
        return Err(SinkError::new(
            ErrorKind::Rejected,
            format!(
                "{}: TDengine queries take no bind parameters (got {}): put the values in \
                 the text",
                statement.label(i),
                statement.params.len()
            ),
        ));
    }
    Ok(())
}

impl TdengineQueryConn {
    /// Runs statement `index`: the rows of its result blocks, or the rows it affected.
    async fn run(&mut self, statement: &Statement, index: usize) -> Result<u64, SinkError> {
        self.req_id += 1;
        let req_id = self.req_id;
        let shared = self.shared.clone();
        if self.taos.is_none() {
            let taos = guarded(shared.timeout, shared.builder.build())
                .await
                .map_err(|f| f.into_sink("reconnecting", &shared))?;
            self.taos = Some(taos);
        }
        let Some(taos) = &self.taos else {
            return Err(SinkError::new(ErrorKind::Connection, "no TDengine session"));
        };
        let counted = guarded(shared.timeout, async {
            let mut result = taos.query_with_req_id(&statement.text, req_id).await?;
            if result.fields().is_empty() {
                return Ok(u64::try_from(result.affected_rows()).unwrap_or(0));
            }
            let mut rows = 0u64;
            let mut blocks = result.blocks();
            while let Some(block) = blocks.try_next().await? {
                rows += block.nrows() as u64;
            }
            Ok(rows)
        })
        .await;
        counted.map_err(|f| f.into_sink(&statement.label(index), &shared))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsload_core::Param;

    #[test]
    fn transactions_and_parameters_are_refused() {
        let tx = QueryRequest {
            kind: 0,
            statements: vec![Statement::new("SELECT 1")],
            transaction: true,
            ..Default::default()
        };
        let e = check_request(&tx).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Rejected);
        assert!(e.message.contains("no transactions"), "{e}");

        let params = QueryRequest {
            kind: 0,
            statements: vec![
                Statement::new("SELECT 1"),
                Statement::with_params("SELECT * FROM t WHERE v > ?", vec![Param::Int(1)]),
            ],
            transaction: false,
            ..Default::default()
        };
        let e = check_request(&params).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Rejected);
        assert!(
            e.message
                .starts_with("statement 2 `SELECT * FROM t WHERE v > ?`: TDengine queries"),
            "{e}"
        );
        let plain = QueryRequest {
            kind: 0,
            statements: vec![Statement::new("SELECT 1")],
            transaction: false,
            ..Default::default()
        };
        assert!(check_request(&plain).is_ok());
    }

    #[test]
    fn target_validates_without_connecting_and_hides_the_password() {
        let mut cfg = TdengineConfig::new("ws://root:pw-123456@127.0.0.1:6041");
        cfg.mode = InsertMode::Stmt2;
        let target = TdengineQueryTarget::new(&cfg).unwrap();
        assert!(!format!("{target:?}").contains("pw-123456"));
        let e =
            TdengineQueryTarget::new(&TdengineConfig::new("http//nope:pw-123456@")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Connection, "{e}");
        assert!(!e.message.contains("pw-123456"), "{e}");
    }

    /// Nothing listens: connecting fails as a (retryable) connection error, quickly,
    /// with the password hidden.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unreachable_server_is_a_connection_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let mut cfg = TdengineConfig::new(format!("ws://root:pw-123456@127.0.0.1:{port}"));
        cfg.request_timeout = std::time::Duration::from_secs(10);
        let target = TdengineQueryTarget::new(&cfg).unwrap();
        let e = target.connect(0).await.unwrap_err();
        assert!(
            matches!(e.kind, ErrorKind::Connection | ErrorKind::Timeout),
            "{e:?}"
        );
        assert!(!e.message.contains("pw-123456"), "{e}");
        assert!(e.message.contains(&format!("127.0.0.1:{port}")), "{e}");
    }
}
