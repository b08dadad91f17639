//! Publishing run folders to a milabench dashboard (the public project `milabench/dashboard`),
//! as the Python tool's `--publish KEY` does: the `.data` files of the folders in one
//! uncompressed zip (entries named `<run folder>/<file>`), posted with the push key to
//! `<dashboard>/api/push/zip/stream`, whose answer is a stream of server-sent events
//! (`info`, `run`, `bench`, `bench_done`, `bench_error`, `done`, `error`) read into
//! [`PublishEvent`]s as they arrive.
//!
//! The archive is checked against the server's limits ([`ArchiveLimits::DASHBOARD`]) from the
//! files' sizes before a byte is read or sent. The push key is a [`PushKey`], which neither
//! `Debug` nor an error ever shows: every text that comes back from the server is searched
//! for it and the key replaced by `<push key>`. Nothing is written to disk and nothing printed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use milabench_load::Endpoint;
use milabench_load::sse::{SseEvent, SseReader};
use milabench_load::tls::TlsClient;

/// Where the Python tool publishes when no dashboard is named.
pub const DEFAULT_DASHBOARD_URL: &str = "https://www.milabench.com";

/// The push route of the dashboard, below its URL.
pub const PUSH_ROUTE: &str = "/api/push/zip/stream";

/// How long connecting to the dashboard may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the dashboard may stay silent while it stores a run (it sends a heartbeat every
/// 15 seconds).
const SILENCE_TIMEOUT: Duration = Duration::from_secs(600);

/// The text that stands for the push key wherever the server's words would show it.
const REDACTED: &str = "<push key>";

/// A dashboard's push key: a secret, never shown (its `Debug` is `PushKey(<push key>)`).
#[derive(Clone, PartialEq, Eq)]
pub struct PushKey(String);

impl PushKey {
    /// The key as given (surrounding blanks trimmed); `None` when empty.
    pub fn new(key: &str) -> Option<PushKey> {
        let key = key.trim();
        (!key.is_empty()).then(|| PushKey(key.to_owned()))
    }

    /// `text` with every occurrence of the key replaced by `<push key>`.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.0, REDACTED)
    }
}

impl std::fmt::Debug for PushKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PushKey({REDACTED})")
    }
}

/// The dashboard's limits on an upload (its `MAX_ZIP_SIZE`, `MAX_ENTRY_SIZE`,
/// `MAX_ZIP_ENTRIES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Bytes of the whole zip.
    pub archive_bytes: u64,
    /// Bytes of one `.data` file.
    pub entry_bytes: u64,
    /// Number of files.
    pub entries: usize,
}

impl ArchiveLimits {
    /// The limits of the dashboard server and of the Python client: 500 MiB, 100 MiB a file,
    /// 50,000 files.
    pub const DASHBOARD: ArchiveLimits = ArchiveLimits {
        archive_bytes: 500 * 1024 * 1024,
        entry_bytes: 100 * 1024 * 1024,
        entries: 50_000,
    };
}

/// The zip of run folders' `.data` files, ready to post.
#[derive(Debug, Clone)]
pub struct Archive {
    bytes: Vec<u8>,
    entries: usize,
}

impl Archive {
    /// The number of `.data` files in it.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it holds no file.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The zip's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// One event of the dashboard's answer to a push.
#[derive(Debug, Clone, PartialEq)]
pub enum PublishEvent {
    /// The archive was read: how many runs it holds, and who pushes (the key's name).
    Info {
        /// The server's words (`Found 1 run(s)`).
        message: String,
        /// The name the push key was registered under.
        contributor: String,
    },
    /// A run is being stored.
    Run {
        /// Its folder's name.
        name: String,
        /// How many benchmarks it holds.
        benchmarks: u64,
    },
    /// A benchmark of the run is being stored.
    Bench {
        /// Its name.
        name: String,
    },
    /// A benchmark was stored.
    BenchDone {
        /// Its name.
        name: String,
        /// How many of its events were stored.
        events: u64,
    },
    /// A benchmark could not be stored.
    BenchError {
        /// Its name.
        name: String,
        /// Why, in the server's words.
        error: String,
    },
    /// The push is complete.
    Done {
        /// The server's words.
        message: String,
    },
}

/// What a push stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Publication {
    /// The runs the dashboard stored, by folder name.
    pub runs: Vec<String>,
    /// The benchmarks stored, over every run.
    pub benchmarks: usize,
}

/// Why a publication failed. Nothing local is changed by a failure: the run folders are only
/// read. No message holds the push key.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// None of the paths given is a folder.
    #[error(
        "there is no run folder to publish (`.data` files given alone are not published); name run folders with --runs"
    )]
    NoRunFolder,
    /// The folders hold no `.data` file.
    #[error(
        "the run folders hold no .data file, so there is nothing to publish: {}",
        folders.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NothingToPublish {
        /// The folders searched.
        folders: Vec<PathBuf>,
    },
    /// A file or folder could not be read.
    #[error("could not read {} to publish it", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// One `.data` file is over the dashboard's limit.
    #[error(
        "{} is {} MiB, over the dashboard's limit of {} MiB a file; nothing was sent. Publish the other run folders without it, or ask the dashboard's operators to raise MAX_ENTRY_SIZE",
        path.display(), mib(*bytes), mib(*limit)
    )]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// Too many `.data` files.
    #[error(
        "the run folders hold {count} .data files, over the dashboard's limit of {limit}; nothing was sent. Publish fewer run folders at a time"
    )]
    TooManyFiles {
        /// How many there are.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// The whole archive is over the dashboard's limit.
    #[error(
        "the archive of the run folders would be {} MiB, over the dashboard's limit of {} MiB; nothing was sent. Publish fewer run folders at a time",
        mib(*bytes), mib(*limit)
    )]
    ArchiveTooLarge {
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The dashboard URL cannot be used.
    #[error("--dashboard-url / MILABENCH_DASHBOARD_URL: {reason}")]
    BadUrl {
        /// Why, naming the URL.
        reason: String,
    },
    /// The dashboard could not be reached, or the connection broke.
    #[error(
        "could not reach the dashboard at {url}: {reason}; nothing is lost, the run folders are as they were: check the URL (--dashboard-url or MILABENCH_DASHBOARD_URL) and the network, then publish them again with `milabench report --runs FOLDER... --publish KEY`"
    )]
    Unreachable {
        /// The dashboard's URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The dashboard does not know the push key.
    #[error(
        "the dashboard at {url} refused the push key (HTTP {status}: {message}); check the key given with --publish or MILABENCH_PUBLISH_KEY, or request one from the dashboard (POST {url}/api/push/key/request)"
    )]
    WrongKey {
        /// The dashboard's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's words.
        message: String,
    },
    /// The dashboard refused the upload for another reason.
    #[error(
        "the dashboard at {url} refused the upload (HTTP {status}: {message}); nothing is lost, the run folders are as they were"
    )]
    Refused {
        /// The dashboard's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's words (one line).
        message: String,
    },
    /// The dashboard failed while it stored the runs.
    #[error(
        "the dashboard at {url} failed while storing the runs: {message}; nothing is lost locally: publish them again with `milabench report --runs FOLDER... --publish KEY`, or tell the dashboard's operators"
    )]
    ServerFailed {
        /// The dashboard's URL.
        url: String,
        /// The server's words.
        message: String,
    },
    /// Some benchmarks could not be stored.
    #[error(
        "the dashboard could not store {} benchmark(s): {}; the others were stored",
        failed.len(),
        failed.iter().map(|(b, e)| format!("{b} ({e})")).collect::<Vec<_>>().join(", ")
    )]
    BenchmarksRejected {
        /// Each benchmark and why.
        failed: Vec<(String, String)>,
    },
}

impl PublishError {
    /// Whether the user's input is at fault (a key, a URL, folders too large), rather than the
    /// network or the server.
    pub fn is_bad_input(&self) -> bool {
        match self {
            PublishError::NoRunFolder
            | PublishError::NothingToPublish { .. }
            | PublishError::FileTooLarge { .. }
            | PublishError::TooManyFiles { .. }
            | PublishError::ArchiveTooLarge { .. }
            | PublishError::BadUrl { .. }
            | PublishError::WrongKey { .. }
            | PublishError::Refused { .. } => true,
            PublishError::Read { .. }
            | PublishError::Unreachable { .. }
            | PublishError::ServerFailed { .. }
            | PublishError::BenchmarksRejected { .. } => false,
        }
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

/// Sizes of the zip's fixed records (local header, central header, end record).
const LOCAL_HEADER: u64 = 30;
const CENTRAL_HEADER: u64 = 46;
const END_RECORD: u64 = 22;

/// Zips the `.data` files under `folders` (those that are folders; files are left out, as the
/// Python tool leaves them), each named by its path from the folder's parent, after checking
/// their count and sizes against `limits`.
pub fn zip_run_folders(
    folders: &[PathBuf],
    limits: ArchiveLimits,
) -> Result<Archive, PublishError> {
    let folders: Vec<&PathBuf> = folders.iter().filter(|f| f.is_dir()).collect();
    if folders.is_empty() {
        return Err(PublishError::NoRunFolder);
    }
    let mut files = Vec::new();
    for folder in &folders {
        let parent = folder.parent().unwrap_or(Path::new(""));
        data_files(folder, parent, &mut files)?;
    }
    if files.is_empty() {
        return Err(PublishError::NothingToPublish {
            folders: folders.into_iter().cloned().collect(),
        });
    }
    if files.len() > limits.entries {
        return Err(PublishError::TooManyFiles {
            count: files.len(),
            limit: limits.entries,
        });
    }
    let mut total = END_RECORD;
    for file in &files {
        if file.size > limits.entry_bytes {
            return Err(PublishError::FileTooLarge {
                path: file.path.clone(),
                bytes: file.size,
                limit: limits.entry_bytes,
            });
        }
        total += LOCAL_HEADER + CENTRAL_HEADER + 2 * file.name.len() as u64 + file.size;
    }
    if total > limits.archive_bytes {
        return Err(PublishError::ArchiveTooLarge {
            bytes: total,
            limit: limits.archive_bytes,
        });
    }
    let mut zip = ZipWriter::default();
    for file in &files {
        let contents = fs_read(&file.path)?;
        zip.add(&file.name, &contents);
    }
    Ok(Archive {
        entries: files.len(),
        bytes: zip.finish(),
    })
}

/// A `.data` file to zip.
struct DataFile {
    path: PathBuf,
    /// Its name in the zip (`/`-separated, from the run folder's parent).
    name: String,
    size: u64,
}

/// The `.data` files under `dir`, in name order, named from `root`.
fn data_files(dir: &Path, root: &Path, out: &mut Vec<DataFile>) -> Result<(), PublishError> {
    let read_error = |source| PublishError::Read {
        path: dir.to_owned(),
        source,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(read_error)?
        .collect::<Result<_, _>>()
        .map_err(read_error)?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let meta = std::fs::metadata(&path).map_err(|source| PublishError::Read {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            data_files(&path, root, out)?;
        } else if path.extension().is_some_and(|e| e == "data") {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let name = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.push(DataFile {
                path,
                name,
                size: meta.len(),
            });
        }
    }
    Ok(())
}

fn fs_read(path: &Path) -> Result<Vec<u8>, PublishError> {
    std::fs::read(path).map_err(|source| PublishError::Read {
        path: path.to_owned(),
        source,
    })
}

/// A zip of stored (uncompressed) entries, as the dashboard accepts (`ZIP_STORED`). Sizes stay
/// under the dashboard's limits, far from needing ZIP64.
#[derive(Default)]
struct ZipWriter {
    bytes: Vec<u8>,
    central: Vec<u8>,
    entries: u16,
}

/// DOS date of 1980-01-01, the zip format's first day (entries carry no meaningful time).
const DOS_DATE: u16 = (1 << 5) | 1;
/// General-purpose flag: the name is UTF-8.
const UTF8_NAME: u16 = 1 << 11;

impl ZipWriter {
    fn add(&mut self, name: &str, contents: &[u8]) {
        let offset = self.bytes.len() as u32;
        let crc = crc32(contents);
        let size = contents.len() as u32;
        let flags = if name.is_ascii() { 0 } else { UTF8_NAME };
        let name_len = name.len() as u16;
        let local = &mut self.bytes;
        put32(local, 0x0403_4b50);
        for v in [20, flags, 0, 0, DOS_DATE] {
            put16(local, v);
        }
        for v in [crc, size, size] {
            put32(local, v);
        }
        put16(local, name_len);
        put16(local, 0);
        local.extend_from_slice(name.as_bytes());
        local.extend_from_slice(contents);
        let central = &mut self.central;
        put32(central, 0x0201_4b50);
        for v in [20, 20, flags, 0, 0, DOS_DATE] {
            put16(central, v);
        }
        for v in [crc, size, size] {
            put32(central, v);
        }
        for v in [name_len, 0, 0, 0, 0] {
            put16(central, v);
        }
        put32(central, 0);
        put32(central, offset);
        central.extend_from_slice(name.as_bytes());
        self.entries += 1;
    }

    fn finish(mut self) -> Vec<u8> {
        let offset = self.bytes.len() as u32;
        let size = self.central.len() as u32;
        self.bytes.append(&mut self.central);
        let end = &mut self.bytes;
        put32(end, 0x0605_4b50);
        for v in [0, 0, self.entries, self.entries] {
            put16(end, v);
        }
        put32(end, size);
        put32(end, offset);
        put16(end, 0);
        self.bytes
    }
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// CRC-32 (IEEE, reflected), as zip entries carry it.
fn crc32(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 == 1 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    !bytes.iter().fold(!0u32, |c, &b| {
        TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

/// Checks that `url` is a dashboard URL `publish` can use (`http[s]://HOST[:PORT][/PREFIX]`),
/// so that a command can refuse it before its work rather than after.
pub fn check_url(url: &str) -> Result<(), PublishError> {
    endpoint(url).map(|_| ())
}

fn endpoint(url: &str) -> Result<Endpoint, PublishError> {
    Endpoint::parse(url).map_err(|e| PublishError::BadUrl {
        reason: e.to_string(),
    })
}

/// Posts `archive` with `key` to the dashboard at `url` and follows its answer, calling
/// `on_event` with each event as it arrives; what was stored once the dashboard says `done`.
pub fn publish(
    archive: &Archive,
    key: &PushKey,
    url: &str,
    on_event: impl FnMut(&PublishEvent),
) -> Result<Publication, PublishError> {
    let url = url.trim_end_matches('/');
    let endpoint = endpoint(url).map_err(|e| match e {
        PublishError::BadUrl { reason } => PublishError::BadUrl {
            reason: key.redact(&reason),
        },
        other => other,
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| PublishError::Unreachable {
            url: url.to_owned(),
            reason: format!("could not start the HTTP client: {e}"),
        })?;
    let push = Push {
        url,
        endpoint: &endpoint,
        key,
    };
    runtime.block_on(push.run(archive, on_event))
}

/// One push in progress.
struct Push<'a> {
    url: &'a str,
    endpoint: &'a Endpoint,
    key: &'a PushKey,
}

impl Push<'_> {
    fn unreachable(&self, reason: impl std::fmt::Display) -> PublishError {
        PublishError::Unreachable {
            url: self.url.to_owned(),
            reason: self.key.redact(&reason.to_string()),
        }
    }

    async fn run(
        &self,
        archive: &Archive,
        mut on_event: impl FnMut(&PublishEvent),
    ) -> Result<Publication, PublishError> {
        let connect = async {
            let stream = tokio::net::TcpStream::connect(&self.endpoint.authority).await?;
            if self.endpoint.tls {
                let tls = TlsClient::new(None).map_err(std::io::Error::other)?;
                let stream = tls.connect(self.endpoint.host(), stream).await?;
                milabench_load::client::http1_over(stream).await
            } else {
                milabench_load::client::http1_over(stream).await
            }
        };
        let mut sender = tokio::time::timeout(CONNECT_TIMEOUT, connect)
            .await
            .map_err(|_| self.unreachable("no connection after 30 s"))?
            .map_err(|e| self.unreachable(e))?;
        let boundary = format!("milabench-{:016x}", fastrand::u64(..));
        let body = multipart(&boundary, self.key, archive);
        let request = hyper::Request::post(format!("{}{PUSH_ROUTE}", self.endpoint.base_path))
            .header(hyper::header::HOST, &self.endpoint.authority)
            .header(
                hyper::header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .header(hyper::header::ACCEPT, "text/event-stream")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| self.unreachable(e))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| self.unreachable(e))?;
        let status = response.status();
        let streamed = response
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|t| t.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let mut body = response.into_body();
        if !streamed {
            let mut text = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| self.unreachable(e))?;
                if let Ok(data) = frame.into_data() {
                    text.extend_from_slice(&data);
                }
            }
            return Err(self.refusal(status.as_u16(), &text));
        }
        let mut stream = EventStream::default();
        let mut reader = SseReader::default();
        while stream.end.is_none() {
            let frame = tokio::time::timeout(SILENCE_TIMEOUT, body.frame())
                .await
                .map_err(|_| self.unreachable("the dashboard said nothing for 10 minutes"))?;
            let Some(frame) = frame else { break };
            let frame = frame.map_err(|e| self.unreachable(e))?;
            if let Ok(data) = frame.into_data() {
                reader
                    .feed_events(&data, |event| {
                        if stream.end.is_none() {
                            stream.take(self, &event, &mut on_event);
                        }
                    })
                    .map_err(|e| self.unreachable(e))?;
            }
        }
        match stream.end {
            Some(end) => end,
            None => Err(self.unreachable(
                "the dashboard closed the connection before saying whether the runs were stored",
            )),
        }
    }

    /// The error of an answer that is not an event stream (a refused key, a bad request).
    fn refusal(&self, status: u16, body: &[u8]) -> PublishError {
        let text = String::from_utf8_lossy(body);
        let message = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| {
                let words: Vec<&str> = text.split_whitespace().collect();
                words.join(" ").chars().take(300).collect()
            });
        let message = self.key.redact(&message);
        let url = self.url.to_owned();
        match status {
            401 | 403 => PublishError::WrongKey {
                url,
                status,
                message,
            },
            _ => PublishError::Refused {
                url,
                status,
                message,
            },
        }
    }
}

/// The state of the answer's events: the runs seen, the benchmarks that failed, and how it
/// ended once it has.
#[derive(Default)]
struct EventStream {
    publication: Publication,
    failed: Vec<(String, String)>,
    end: Option<Result<Publication, PublishError>>,
}

impl EventStream {
    fn take(
        &mut self,
        push: &Push<'_>,
        event: &SseEvent,
        on_event: &mut impl FnMut(&PublishEvent),
    ) {
        let Ok(data) = serde_json::from_str::<serde_json::Value>(&event.data) else {
            return;
        };
        let text = |field: &str| push.key.redact(data[field].as_str().unwrap_or_default());
        let count = |field: &str| data[field].as_u64().unwrap_or_default();
        let event = match event.name.as_deref() {
            Some("info") => PublishEvent::Info {
                message: text("message"),
                contributor: text("contributor"),
            },
            Some("run") => {
                self.publication.runs.push(text("name"));
                PublishEvent::Run {
                    name: text("name"),
                    benchmarks: count("benchmarks"),
                }
            }
            Some("bench") => PublishEvent::Bench { name: text("name") },
            Some("bench_done") => {
                self.publication.benchmarks += 1;
                PublishEvent::BenchDone {
                    name: text("name"),
                    events: count("events"),
                }
            }
            Some("bench_error") => {
                self.failed.push((text("name"), text("error")));
                PublishEvent::BenchError {
                    name: text("name"),
                    error: text("error"),
                }
            }
            Some("done") if data["status"] == "OK" => {
                let publication = std::mem::take(&mut self.publication);
                self.end = Some(if self.failed.is_empty() {
                    Ok(publication)
                } else {
                    Err(PublishError::BenchmarksRejected {
                        failed: std::mem::take(&mut self.failed),
                    })
                });
                PublishEvent::Done {
                    message: text("message"),
                }
            }
            Some("done" | "error") => {
                self.end = Some(Err(PublishError::ServerFailed {
                    url: push.url.to_owned(),
                    message: text("message"),
                }));
                return;
            }
            _ => return,
        };
        on_event(&event);
    }
}

/// The multipart form of a push: the key, then the archive as `results.zip`.
fn multipart(boundary: &str, key: &PushKey, archive: &Archive) -> Vec<u8> {
    let mut body = Vec::with_capacity(archive.len() + 512);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n{}\r\n",
            key.0
        )
        .as_bytes(),
    );
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"results.zip\"\r\nContent-Type: application/zip\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(archive.as_bytes());
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_the_zip_checksum() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    fn run_folder(root: &Path, name: &str, files: &[(&str, &[u8])]) -> PathBuf {
        let folder = root.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        for (file, contents) in files {
            std::fs::write(folder.join(file), contents).unwrap();
        }
        folder
    }

    #[test]
    fn the_zip_holds_the_data_files_named_from_the_folders_parent() {
        let dir = tempfile::tempdir().unwrap();
        let folder = run_folder(
            dir.path(),
            "run.one",
            &[
                ("b.D0.data", b"{\"event\": \"x\"}\n"),
                ("a.D0.data", b"second\n"),
                ("report.html", b"<html>"),
            ],
        );
        let archive = zip_run_folders(&[folder], ArchiveLimits::DASHBOARD).unwrap();
        assert_eq!(archive.entries(), 2);
        let bytes = archive.as_bytes();
        let names: Vec<String> = ["run.one/a.D0.data", "run.one/b.D0.data"]
            .iter()
            .map(|n| n.to_string())
            .collect();
        for name in &names {
            let found = bytes
                .windows(name.len())
                .filter(|w| *w == name.as_bytes())
                .count();
            assert_eq!(found, 2, "{name}: in the local and the central header");
        }
        assert!(!bytes.windows(6).any(|w| w == b"<html>"));
        // The end record counts both entries and points at the central directory.
        let end = &bytes[bytes.len() - 22..];
        assert_eq!(&end[..4], &0x0605_4b50u32.to_le_bytes());
        assert_eq!(u16::from_le_bytes([end[10], end[11]]), 2);
        let offset = u32::from_le_bytes([end[16], end[17], end[18], end[19]]) as usize;
        assert_eq!(&bytes[offset..offset + 4], &0x0201_4b50u32.to_le_bytes());
    }

    #[test]
    fn limits_are_checked_from_the_sizes_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let folder = run_folder(dir.path(), "run", &[("a.data", b"12345"), ("b.data", b"6")]);
        let limits = |archive_bytes, entry_bytes, entries| ArchiveLimits {
            archive_bytes,
            entry_bytes,
            entries,
        };
        let too_many = zip_run_folders(std::slice::from_ref(&folder), limits(1 << 20, 100, 1));
        assert!(matches!(
            too_many,
            Err(PublishError::TooManyFiles { count: 2, limit: 1 })
        ));
        let too_large = zip_run_folders(std::slice::from_ref(&folder), limits(1 << 20, 4, 10));
        assert!(
            matches!(&too_large, Err(PublishError::FileTooLarge { bytes: 5, limit: 4, path }) if path.ends_with("a.data"))
        );
        let archive =
            zip_run_folders(std::slice::from_ref(&folder), ArchiveLimits::DASHBOARD).unwrap();
        let exact = archive.len() as u64;
        assert!(zip_run_folders(std::slice::from_ref(&folder), limits(exact, 100, 10)).is_ok());
        let over = zip_run_folders(std::slice::from_ref(&folder), limits(exact - 1, 100, 10));
        let Err(err) = over else { panic!("{over:?}") };
        assert!(err.to_string().contains("nothing was sent"), "{err}");
        assert!(matches!(err, PublishError::ArchiveTooLarge { bytes, .. } if bytes == exact));
    }

    #[test]
    fn files_alone_and_empty_folders_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.data");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(
            zip_run_folders(&[file], ArchiveLimits::DASHBOARD),
            Err(PublishError::NoRunFolder)
        ));
        let empty = run_folder(dir.path(), "empty", &[]);
        assert!(matches!(
            zip_run_folders(&[empty], ArchiveLimits::DASHBOARD),
            Err(PublishError::NothingToPublish { .. })
        ));
    }

    #[test]
    fn the_key_never_shows() {
        let key = PushKey::new(" s3cret-key ").unwrap();
        assert_eq!(format!("{key:?}"), "PushKey(<push key>)");
        assert_eq!(key.redact("bad key s3cret-key"), "bad key <push key>");
        assert!(PushKey::new("  ").is_none());
    }
}
