//! The read seam: a [`QueryWorkload`] hands each worker a [`QuerySource`] of requests (a
//! query, or a transaction of statements), and a [`QueryTarget`] opens one [`QueryConn`]
//! per worker that executes them. Requests carry finished text in the target's dialect
//! plus bind parameters, so core knows no query language and no database.

use std::future::Future;
use std::sync::Arc;

use crate::shard::Shard;
use crate::sink::SinkError;

/// A bind parameter of a [`Statement`], in order of its placeholders.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Int(i64),
    Float(f64),
    Text(String),
}

/// One statement: text in the target's dialect, and its bind parameters (empty when the
/// text is complete, as for InfluxQL, PromQL and most TSBS queries).
///
/// The text is shared: a source that sends the same statement again and again (every
/// OLTP event) hands out a reference to one text instead of a copy per request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statement {
    pub text: Arc<str>,
    pub params: Vec<Param>,
}

impl Statement {
    pub fn new(text: impl Into<Arc<str>>) -> Self {
        Statement {
            text: text.into(),
            params: Vec::new(),
        }
    }

    pub fn with_params(text: impl Into<Arc<str>>, params: Vec<Param>) -> Self {
        Statement {
            text: text.into(),
            params,
        }
    }
}

/// One request of a query run: a single query, or a transaction of statements. Sources
/// refill the same request again and again, so its vectors keep their capacity: the
/// statement list's, and (through [`QueryRequest::push`]) each statement's parameters'.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryRequest {
    /// Index into the workload's [`QueryWorkload::kinds`]; latency is kept per kind.
    pub kind: usize,
    /// Statements run in order on one connection.
    pub statements: Vec<Statement>,
    /// Whether the statements run between BEGIN and COMMIT (rolled back on an error).
    pub transaction: bool,
    /// The emptied parameter vectors of the statements cleared, for [`QueryRequest::push`].
    pub spare: SpareParams,
}

impl QueryRequest {
    /// Empties the request for refilling; the statements' parameter vectors are kept for
    /// [`QueryRequest::push`].
    pub fn clear(&mut self) {
        self.kind = 0;
        for statement in self.statements.drain(..) {
            self.spare.put(statement.params);
        }
        self.transaction = false;
    }

    /// Appends a statement whose parameters go into a vector a cleared statement left,
    /// so a source that refills the request allocates none per statement (one malloc and
    /// free fewer per point select, measured with callgrind at about 3% of a worker's
    /// instructions).
    pub fn push(&mut self, text: Arc<str>, params: impl IntoIterator<Item = Param>) {
        let mut vec = self.spare.take();
        vec.extend(params);
        self.statements.push(Statement { text, params: vec });
    }
}

/// Emptied parameter vectors kept for reuse: capacity only, so never part of a request's
/// value (any two compare equal).
#[derive(Debug, Clone, Default)]
pub struct SpareParams(Vec<Vec<Param>>);

impl SpareParams {
    fn put(&mut self, mut params: Vec<Param>) {
        if params.capacity() > 0 {
            params.clear();
            self.0.push(params);
        }
    }

    fn take(&mut self) -> Vec<Param> {
        self.0.pop().unwrap_or_default()
    }
}

impl PartialEq for SpareParams {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// What the server returned for one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryAck {
    /// Result rows (or series points, for HTTP query APIs) summed over the statements;
    /// for statements that return no rows, the rows they affected.
    pub rows: u64,
    /// Statements executed (BEGIN and COMMIT not counted).
    pub statements: u64,
}

/// A deterministic stream of read requests (a seed fixes every choice).
pub trait QueryWorkload: Send + Sync {
    /// Names of the request kinds, e.g. TSBS query types or `oltp_read_write`.
    fn kinds(&self) -> &[String];

    /// Requests that create what the load needs (DDL), run once, in order, on one
    /// connection before any [`QueryWorkload::load`] source. Empty by default.
    fn setup(&self) -> Vec<QueryRequest> {
        Vec::new()
    }

    /// The data-loading source of loader `worker` of `workers` (e.g. sysbench's prepare:
    /// multi-row INSERTs), run after setup and before the timed load; `None` by default.
    fn load(&self, _worker: usize, _workers: usize) -> Option<Box<dyn QuerySource>> {
        None
    }

    /// The request source of worker `worker` of `workers` for the timed load.
    fn source(&self, worker: usize, workers: usize) -> Box<dyn QuerySource>;

    /// The request source of local worker `worker` of `workers` of `shard`, one of the
    /// processes a run is split over: the shards' sources together must make exactly the
    /// requests one process makes. By default the global worker `worker * N + index` of
    /// `workers * N` ([`Shard::global_worker`]); a workload whose requests are numbered up
    /// to a limit may give the shard its block of them ([`Shard::part`]) instead.
    fn shard_source(&self, worker: usize, workers: usize, shard: Shard) -> Box<dyn QuerySource> {
        let (w, n) = shard.global_worker(worker, workers);
        self.source(w, n)
    }
}

/// Streams one worker's requests.
pub trait QuerySource: Send {
    /// Fills `request` (which the caller has cleared) with the next request; false when the
    /// source is exhausted (a TSBS query count reached), true otherwise.
    fn next(&mut self, request: &mut QueryRequest) -> bool;
}

/// A read target: opens one connection per worker.
pub trait QueryTarget: Send + Sync + 'static {
    type Conn: QueryConn;

    /// Opens the connection of worker `worker`.
    fn connect(&self, worker: usize) -> impl Future<Output = Result<Self::Conn, SinkError>> + Send;

    /// Whether each worker runs on its own thread with its own current-thread runtime
    /// (where its connection is opened, and where it waits for its answers alone, as a
    /// sysbench thread does) instead of as a task on the run's shared runtime. For targets
    /// whose connections are one socket each and share nothing with the other workers'.
    ///
    /// That runtime has no tokio time driver where [`tsload_timer::NEEDS_TIME_DRIVER`] is
    /// false (Linux): `connect` and `execute` must not use `tokio::time` (it panics
    /// there), but wait on a [`tsload_timer::ReactorTimer`] (or `tsload_timer::timeout`).
    fn thread_per_worker(&self) -> bool {
        false
    }

    /// Opens the connection of worker `worker` on that worker's own thread (where
    /// [`QueryTarget::thread_per_worker`] is true), first and after a lost connection alike.
    /// Nothing else shares the thread, so the connection may wait for its answers by
    /// blocking it, as a sysbench thread does, as long as it lets the thread's runtime poll
    /// its timers now and then (the worker's request timeout is one). [`QueryTarget::connect`]
    /// by default.
    fn connect_on_own_thread(
        &self,
        worker: usize,
    ) -> impl Future<Output = Result<Self::Conn, SinkError>> + Send {
        self.connect(worker)
    }
}

/// One worker's connection.
pub trait QueryConn: Send + 'static {
    /// Executes every statement of `request` (inside a transaction when it asks for one)
    /// and reads every result row to the end; the error names the statement that failed.
    fn execute(
        &mut self,
        request: &QueryRequest,
    ) -> impl Future<Output = Result<QueryAck, SinkError>> + Send;
}

/// Most characters of a statement's text that [`Statement::excerpt`] keeps.
pub const EXCERPT_CHARS: usize = 200;

impl Statement {
    /// The start of the text, for error messages: runs of whitespace (the line breaks of
    /// multi-line SQL) become one space, and text past [`EXCERPT_CHARS`] characters is cut
    /// and marked with `...`.
    pub fn excerpt(&self) -> String {
        let mut out = String::with_capacity(self.text.len().min(EXCERPT_CHARS + 3));
        let mut chars = 0;
        for word in self.text.split_whitespace() {
            if chars > 0 {
                if chars == EXCERPT_CHARS {
                    out.push_str("...");
                    return out;
                }
                out.push(' ');
                chars += 1;
            }
            for c in word.chars() {
                if chars == EXCERPT_CHARS {
                    out.push_str("...");
                    return out;
                }
                out.push(c);
                chars += 1;
            }
        }
        out
    }

    /// How an error names this statement, `index` (from 0) in its request:
    /// ``statement 2 `UPDATE sbtest1 SET k=k+1 WHERE id=?` ``.
    pub fn label(&self, index: usize) -> String {
        format!("statement {} `{}`", index + 1, self.excerpt())
    }
}

/// A query workload seen by one shard: shard 0 alone runs the setup (the others wait for
/// it at the start gate), loaders take their global parts, and workers the shard's part
/// the workload gives ([`QueryWorkload::shard_source`]).
pub struct ShardedQueries {
    inner: Arc<dyn QueryWorkload>,
    shard: Shard,
}

impl ShardedQueries {
    pub fn new(inner: Arc<dyn QueryWorkload>, shard: Shard) -> Self {
        ShardedQueries { inner, shard }
    }
}

impl QueryWorkload for ShardedQueries {
    fn kinds(&self) -> &[String] {
        self.inner.kinds()
    }

    fn setup(&self) -> Vec<QueryRequest> {
        if self.shard.index == 0 {
            self.inner.setup()
        } else {
            Vec::new()
        }
    }

    fn load(&self, worker: usize, workers: usize) -> Option<Box<dyn QuerySource>> {
        let (w, n) = self.shard.global_worker(worker, workers);
        self.inner.load(w, n)
    }

    fn source(&self, worker: usize, workers: usize) -> Box<dyn QuerySource> {
        self.inner.shard_source(worker, workers, self.shard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refilled_request_reuses_its_parameter_vectors_and_equals_a_fresh_one() {
        let text: Arc<str> = Arc::from("SELECT c FROM sbtest1 WHERE id=?");
        let mut request = QueryRequest::default();
        request.push(text.clone(), [Param::Int(1)]);
        request.push(text.clone(), [Param::Int(2), Param::Text("x".into())]);
        let fresh = QueryRequest {
            statements: vec![
                Statement::with_params(text.clone(), vec![Param::Int(1)]),
                Statement::with_params(text.clone(), vec![Param::Int(2), Param::Text("x".into())]),
            ],
            ..QueryRequest::default()
        };
        assert_eq!(request, fresh);
        let held: Vec<*const Param> = request
            .statements
            .iter()
            .map(|s| s.params.as_ptr())
            .collect();

        request.clear();
        assert!(request.statements.is_empty());
        request.push(text.clone(), [Param::Int(3)]);
        request.push(text.clone(), [Param::Int(4)]);
        // The same two vectors, last cleared first, with nothing of the old values left.
        let reused: Vec<*const Param> = request
            .statements
            .iter()
            .map(|s| s.params.as_ptr())
            .collect();
        assert_eq!(reused, [held[1], held[0]]);
        assert_eq!(request.statements[0].params, [Param::Int(3)]);
        assert_eq!(request.statements[1].params, [Param::Int(4)]);
        // A third has no vector to reuse: a new one.
        request.push(text, []);
        assert!(request.statements[2].params.is_empty());
    }

    #[test]
    fn excerpt_collapses_whitespace_and_cuts_long_text() {
        let s = Statement::new("SELECT *\n  FROM\tcpu\n WHERE x = 'a  b' ");
        assert_eq!(s.excerpt(), "SELECT * FROM cpu WHERE x = 'a b'");
        assert_eq!(
            s.label(1),
            "statement 2 `SELECT * FROM cpu WHERE x = 'a b'`"
        );

        let long = Statement::new(format!("SELECT {}", "é".repeat(300)));
        let e = long.excerpt();
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 3);
        assert!(e.starts_with("SELECT éé") && e.ends_with("é..."), "{e}");

        let exact = Statement::new("x".repeat(EXCERPT_CHARS));
        assert_eq!(exact.excerpt(), "x".repeat(EXCERPT_CHARS));
        let word_after = Statement::new(format!("{} y", "x".repeat(EXCERPT_CHARS)));
        assert_eq!(
            word_after.excerpt(),
            format!("{}...", "x".repeat(EXCERPT_CHARS))
        );
        assert_eq!(Statement::new("  ").excerpt(), "");
    }
}
