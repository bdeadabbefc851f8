//! `--out influx=URL`: every interval as a row of measurement `tsload`, encoded by
//! tsload-lineproto like any other batch and posted in order by one task on the run's
//! runtime.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tsload_report::StreamKind;

use crate::OutputError;
use crate::row::IntervalRow;

/// Intervals `--out influx=` holds while its server is slow; more are dropped (and said).
const PUSH_QUEUE: usize = 1024;

/// `--out influx=`: each interval as a row of measurement `tsload` (tag `stream`, time = the
/// interval's start), encoded
/// by tsload-lineproto and posted, in order, by one task on the run's runtime.
pub(crate) struct InfluxPush {
    pub(crate) url: tsload_redact::SecretUrl,
    encoder: tsload_lineproto::LineEncoder,
    batch: tsload_core::Batch,
    tx: Option<tokio::sync::mpsc::Sender<Vec<u8>>>,
    rx: Option<tokio::sync::mpsc::Receiver<Vec<u8>>>,
    task: Option<tokio::task::JoinHandle<()>>,
    client: reqwest::Client,
    /// `INFLUX_TOKEN` from the environment, sent as `Authorization: Token ...` (InfluxDB
    /// 2.x/3.x; 1.8+ takes `user:password` there too). Never shown.
    token: Option<tsload_redact::Secret>,
    /// The first failed post. After an HTTP error status the later intervals are still
    /// sent; after an unreachable or timed-out post they are not.
    pub(crate) error: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for InfluxPush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InfluxPush")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// An error and its sources, `: `-joined (reqwest's own text hides the cause).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// The environment variable whose token `--out influx=URL` sends (the influx CLI's name).
const INFLUX_TOKEN_ENV: &str = "INFLUX_TOKEN";

#[derive(Debug)]
struct StreamTags;

impl tsload_core::TagSource for StreamTags {
    fn device_tags(&self, device: u32, out: &mut Vec<tsload_core::TagValue>) {
        out.clear();
        let name = StreamKind::ALL
            .get(device as usize)
            .map_or("other", |s| s.as_str());
        out.push(tsload_core::TagValue::Str(std::borrow::Cow::Borrowed(name)));
    }
}

/// The integer fields, then the float ones, of the `tsload` measurement.
const INT_FIELDS: [&str; 6] = ["requests", "rows", "metrics", "bytes", "errors", "retries"];
const FLOAT_FIELDS: [&str; 8] = [
    "requests_per_s",
    "rows_per_s",
    "metrics_per_s",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
];

impl InfluxPush {
    pub(crate) fn new(url: &tsload_redact::SecretUrl) -> Result<InfluxPush, OutputError> {
        use tsload_core::{DataType, FieldDef, Schema, TableSchema, TagDef};
        let fields = INT_FIELDS
            .iter()
            .map(|n| (n, DataType::BigInt))
            .chain(FLOAT_FIELDS.iter().map(|n| (n, DataType::Double)))
            .map(|(name, data_type)| FieldDef {
                name: name.to_string(),
                data_type,
            })
            .collect();
        let schema = Arc::new(Schema {
            tables: vec![TableSchema {
                name: "tsload".into(),
                tags: vec![TagDef {
                    name: "stream".into(),
                    data_type: DataType::Varchar(16),
                    slot: 0,
                }],
                fields,
            }],
            tag_slots: 1,
            device_count: StreamKind::ALL.len() as u32,
            tags: Arc::new(StreamTags),
        });
        let client_error = |e: String| OutputError::Client(e);
        let tls = tsload_tls::client_config(&tsload_tls::TlsOptions::default())
            .map_err(|e| client_error(e.to_string()))?;
        let client = tsload_http::client_builder(tls)
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| client_error(error_chain(&e)))?;
        let (tx, rx) = tokio::sync::mpsc::channel(PUSH_QUEUE);
        Ok(InfluxPush {
            url: url.clone(),
            batch: tsload_core::Batch::for_schema(&schema),
            encoder: tsload_lineproto::LineEncoder::new(schema, tsload_lineproto::Precision::Ns),
            tx: Some(tx),
            rx: Some(rx),
            task: None,
            client,
            token: std::env::var(INFLUX_TOKEN_ENV)
                .ok()
                .filter(|t| !t.is_empty())
                .map(|t| InfluxPush::token_header(&t)),
            error: Arc::new(Mutex::new(None)),
        })
    }

    /// The `Authorization` value of an InfluxDB token.
    fn token_header(token: &str) -> tsload_redact::Secret {
        tsload_redact::Secret::new(format!("Token {token}"))
    }

    /// One post of `body`, with the token when there is one.
    fn post(
        client: &reqwest::Client,
        url: &str,
        token: Option<&tsload_redact::Secret>,
        body: Vec<u8>,
    ) -> reqwest::RequestBuilder {
        tsload_http::with_authorization(client.post(url).body(body), token)
    }

    /// An empty write to the endpoint: a 401, 403 or 404 (InfluxDB's "database not
    /// found") refuses the run before it starts; an unreachable server too. Other answers
    /// (a server that refuses an empty body with a 400) are left to the run.
    pub(crate) async fn check(&self) -> Result<(), OutputError> {
        let request = InfluxPush::post(
            &self.client,
            self.url.expose(),
            self.token.as_ref(),
            Vec::new(),
        );
        let refused = |why: String| {
            OutputError::Refused(format!(
                "--out influx={}: {why}; the run did not start (fix the URL or the credentials, \
                 or create the database)",
                self.url
            ))
        };
        match request.send().await {
            Ok(r) if matches!(r.status().as_u16(), 401 | 403 | 404) => {
                let status = r.status();
                let body = tsload_http::error_text(r).await;
                let body: String = body.trim().chars().take(200).collect();
                Err(refused(format!(
                    "the server answered an empty write with HTTP {status}: {body}"
                )))
            }
            Ok(r) => {
                tsload_http::drain(r).await;
                Ok(())
            }
            Err(e) => Err(refused(format!(
                "the server cannot be reached: {}",
                error_chain(&e.without_url())
            ))),
        }
    }

    pub(crate) fn start(&mut self, runtime: &tokio::runtime::Runtime) {
        let Some(mut rx) = self.rx.take() else {
            return;
        };
        let (client, url, error) = (self.client.clone(), self.url.clone(), self.error.clone());
        let token = self.token.clone();
        self.task = Some(runtime.spawn(async move {
            while let Some(body) = rx.recv().await {
                let request = InfluxPush::post(&client, url.expose(), token.as_ref(), body);
                let failed = match request.send().await {
                    Ok(r) if r.status().is_success() => {
                        tsload_http::drain(r).await;
                        None
                    }
                    Ok(r) => match tsload_http::redirect_message(r.status(), r.headers()) {
                        Some(m) => Some((m, true)),
                        None => {
                            let status = r.status();
                            let body = tsload_http::error_text(r).await;
                            let body: String = body.trim().chars().take(200).collect();
                            Some((format!("HTTP {status}: {body}"), false))
                        }
                    },
                    // Unreachable or timed out: the next posts would wait as long each.
                    // Without the URL: reqwest's text has its query, secrets and all.
                    Err(e) => Some((error_chain(&e.without_url()), true)),
                };
                let Some((e, give_up)) = failed else { continue };
                if let Ok(mut slot) = error.lock() {
                    let rest = if give_up {
                        "; the later intervals were not sent"
                    } else {
                        ""
                    };
                    slot.get_or_insert(format!("--out influx={url}: {e}{rest}"));
                }
                if give_up {
                    break;
                }
            }
        }));
    }

    pub(crate) fn send(&mut self, row: &IntervalRow) {
        use tsload_core::ColumnValues;
        self.batch.clear();
        let t = &mut self.batch.tables[0];
        t.device.push(
            StreamKind::ALL
                .iter()
                .position(|s| *s == row.stream)
                .unwrap_or(0) as u32,
        );
        // Stamped with the interval's start: distinct even at millisecond precision
        // (VictoriaMetrics), where the last, partial interval can end in the same
        // millisecond as the one before it.
        t.ts.push(((row.time - row.interval_s) * 1e9) as i64);
        let ints = [
            row.requests,
            row.rows,
            row.metrics,
            row.bytes,
            row.errors,
            row.retries,
        ];
        let floats = [
            row.requests_per_s,
            row.rows_per_s,
            row.metrics_per_s,
            Some(row.p50_ms),
            Some(row.p90_ms),
            Some(row.p99_ms),
            Some(row.p999_ms),
            Some(row.max_ms),
        ];
        for (i, v) in ints.iter().enumerate() {
            if let ColumnValues::Int(c) = &mut t.columns[i].values {
                c.push(i64::try_from(*v).unwrap_or(i64::MAX));
            }
        }
        for (j, v) in floats.iter().enumerate() {
            let i = INT_FIELDS.len() + j;
            if let ColumnValues::Float(c) = &mut t.columns[i].values {
                c.push(v.unwrap_or(0.0));
            }
            if v.is_none() {
                t.set_null(i, 0);
            }
        }
        t.finish_validity();
        let mut body = Vec::with_capacity(512);
        self.encoder.encode(&self.batch, &mut body);
        if let Some(tx) = &self.tx
            && let Err(tokio::sync::mpsc::error::TrySendError::Full(_)) = tx.try_send(body)
            && let Ok(mut slot) = self.error.lock()
        {
            // Bounded: a server slower than the report interval loses intervals, said
            // at the end, rather than growing the client's memory.
            slot.get_or_insert(format!(
                "--out influx={}: the server fell {PUSH_QUEUE} intervals behind; later intervals were dropped",
                self.url
            ));
        }
    }

    /// Ends the queue; the task finishes once it has posted everything.
    pub(crate) fn close(&mut self) -> Option<tokio::task::JoinHandle<()>> {
        self.tx = None;
        self.task.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_influx_token_goes_in_the_authorization_header_only() {
        let tls = tsload_tls::client_config(&tsload_tls::TlsOptions::default()).unwrap();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .build()
            .unwrap();
        let url = "https://h/api/v2/write?org=o&bucket=b";
        let r = InfluxPush::post(
            &client,
            url,
            Some(&InfluxPush::token_header("s3cret")),
            b"x".to_vec(),
        )
        .build()
        .unwrap();
        assert_eq!(r.headers()["authorization"], "Token s3cret");
        assert_eq!(r.url().as_str(), url);
        let r = InfluxPush::post(&client, url, None, Vec::new())
            .build()
            .unwrap();
        assert!(r.headers().get("authorization").is_none());
    }
}
