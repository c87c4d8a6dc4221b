//! The entity map of one test: clients (with their event listeners), databases, collections
//! and saved results, created from `createEntities`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, Document};
use steadfast::options::{CollectionOptions, DatabaseOptions, ReadConcern, ReadConcernLevel};
use steadfast::{Client, ClientSession, Collection, Database, SessionOptions};
use steadfast_core::TopologyDescription;
use tokio::task::JoinHandle;

use crate::args::write_concern;
use crate::events::Observation;
use crate::fixture::{FAST_HEARTBEAT_MS, Fixture};
use crate::matcher::EntityValues;
use crate::observe::EntityListener;

/// A client entity.
pub(crate) struct ClientEntity {
    /// The driver's client.
    pub(crate) client: Client,
    /// What it observed.
    pub(crate) listener: Arc<EntityListener>,
    /// Its spans, when it observes tracing messages.
    pub(crate) tracing: Option<crate::spans::ClientTracing>,
}

/// One entity.
pub(crate) enum Entity {
    /// A client.
    Client(ClientEntity),
    /// A database.
    Database(Database),
    /// A collection of documents.
    Collection(Collection<Document>),
    /// A cursor (`createFindCursor` saved as an entity); `None` once closed. In a mutex so
    /// that the map stays `Sync` (a thread's operations borrow it across awaits); only ever
    /// reached through `&mut`, so it is never locked.
    Cursor(std::sync::Mutex<Option<crate::ops::cursor::CursorEntity>>),
    /// A change stream (`createChangeStream` saved as an entity); `None` once closed. In a
    /// mutex for the same reason as a cursor.
    ChangeStream(std::sync::Mutex<Option<crate::ops::change_streams::RawChangeStream>>),
    /// A saved result.
    Bson(Bson),
    /// A thread (`runOnThread` / `waitForThread`).
    Thread(ThreadEntity),
    /// A topology description saved by `recordTopologyDescription`.
    Topology(Arc<TopologyDescription>),
    /// An explicit session.
    Session(SessionEntity),
    /// A GridFS bucket.
    Bucket(steadfast::gridfs::GridFsBucket),
}

/// A session entity: the session (shared with the operations that use it, `None` once
/// `endSession` ended it) and its id, which `$$sessionLsid` reads even after it ended.
pub(crate) struct SessionEntity {
    /// The driver's session.
    pub(crate) session: Arc<tokio::sync::Mutex<Option<ClientSession>>>,
    /// The session's `lsid`.
    pub(crate) lsid: Document,
}

/// A thread entity: the task running the operations given to it so far, each after the one
/// before (the last task awaits its predecessor), ending with the first failure.
#[derive(Default)]
pub(crate) struct ThreadEntity {
    /// The task of the last operation given to the thread, until `waitForThread` takes it.
    pub(crate) last: Option<JoinHandle<Result<(), String>>>,
}

impl Entity {
    /// What kind of entity this is, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Entity::Client(_) => "client",
            Entity::Database(_) => "database",
            Entity::Collection(_) => "collection",
            Entity::Cursor(_) => "cursor",
            Entity::ChangeStream(_) => "change stream",
            Entity::Bson(_) => "BSON value",
            Entity::Thread(_) => "thread",
            Entity::Topology(_) => "topology description",
            Entity::Session(_) => "session",
            Entity::Bucket(_) => "bucket",
        }
    }

    /// A handle to the same object, for an operation run on a thread: clients, databases and
    /// collections (all cheap handles); `None` for other entities.
    pub(crate) fn share(&self) -> Option<Entity> {
        Some(match self {
            Entity::Client(c) => Entity::Client(ClientEntity {
                client: c.client.clone(),
                listener: c.listener.clone(),
                tracing: c.tracing.clone(),
            }),
            Entity::Database(d) => Entity::Database(d.clone()),
            Entity::Collection(c) => Entity::Collection(c.clone()),
            Entity::Bucket(b) => Entity::Bucket(b.clone()),
            Entity::Session(s) => Entity::Session(SessionEntity {
                session: s.session.clone(),
                lsid: s.lsid.clone(),
            }),
            Entity::Cursor(_)
            | Entity::ChangeStream(_)
            | Entity::Bson(_)
            | Entity::Thread(_)
            | Entity::Topology(_) => {
                return None;
            }
        })
    }
}

/// The entities of one test, by id, in creation order.
#[derive(Default)]
pub(crate) struct EntityMap {
    entities: HashMap<String, Entity>,
    order: Vec<String>,
}

impl EntityMap {
    /// Adds an entity; ids are unique.
    pub(crate) fn insert(&mut self, id: &str, entity: Entity) -> Result<(), String> {
        if self.entities.contains_key(id) {
            return Err(format!("entity {id:?} already exists"));
        }
        self.order.push(id.to_owned());
        self.entities.insert(id.to_owned(), entity);
        Ok(())
    }

    /// The entity named `id`.
    pub(crate) fn get(&self, id: &str) -> Result<&Entity, String> {
        self.entities
            .get(id)
            .ok_or_else(|| format!("no entity named {id:?}"))
    }

    /// The cursor entity named `id`, if there is one.
    pub(crate) fn cursor_mut(
        &mut self,
        id: &str,
    ) -> Option<&mut Option<crate::ops::cursor::CursorEntity>> {
        match self.entities.get_mut(id) {
            Some(Entity::Cursor(cursor)) => Some(
                cursor
                    .get_mut()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            ),
            _ => None,
        }
    }

    /// The change-stream entity named `id`, if there is one.
    pub(crate) fn change_stream_mut(
        &mut self,
        id: &str,
    ) -> Option<&mut Option<crate::ops::change_streams::RawChangeStream>> {
        match self.entities.get_mut(id) {
            Some(Entity::ChangeStream(stream)) => Some(
                stream
                    .get_mut()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            ),
            _ => None,
        }
    }

    /// Every client entity.
    pub(crate) fn clients(&self) -> impl Iterator<Item = &ClientEntity> {
        self.entities.values().filter_map(|entity| match entity {
            Entity::Client(client) => Some(client),
            _ => None,
        })
    }

    /// The client entity named `id`.
    pub(crate) fn client(&self, id: &str) -> Result<&ClientEntity, String> {
        match self.get(id)? {
            Entity::Client(c) => Ok(c),
            other => Err(format!("entity {id:?} is a {}, not a client", other.kind())),
        }
    }

    /// The session entity named `id`.
    pub(crate) fn session(&self, id: &str) -> Result<&SessionEntity, String> {
        match self.get(id)? {
            Entity::Session(s) => Ok(s),
            other => Err(format!(
                "entity {id:?} is a {}, not a session",
                other.kind()
            )),
        }
    }

    /// The thread entity named `id`.
    pub(crate) fn thread_mut(&mut self, id: &str) -> Result<&mut ThreadEntity, String> {
        match self.entities.get_mut(id) {
            Some(Entity::Thread(t)) => Ok(t),
            Some(other) => Err(format!("entity {id:?} is a {}, not a thread", other.kind())),
            None => Err(format!("no entity named {id:?}")),
        }
    }

    /// Stops every thread's task, shuts every client down (in creation order) and forgets
    /// every entity.
    pub(crate) async fn close(&mut self) {
        for id in std::mem::take(&mut self.order) {
            match self.entities.remove(&id) {
                Some(Entity::Client(entity)) => entity.client.shutdown().await,
                Some(Entity::Session(entity)) => drop(entity.session.lock().await.take()),
                Some(Entity::Thread(thread)) => {
                    if let Some(task) = thread.last {
                        task.abort();
                    }
                }
                _ => {}
            }
        }
        self.entities.clear();
    }

    /// Creates the entities of a `createEntities` list, in order.
    pub(crate) async fn create(
        &mut self,
        list: &[Document],
        fixture: &Fixture,
    ) -> Result<(), String> {
        for entity in list {
            let mut entries = entity.iter();
            let (Some((kind, Bson::Document(spec))), None) = (entries.next(), entries.next())
            else {
                return Err(format!("an entity must have exactly one key: {entity}"));
            };
            let id = spec
                .get_str("id")
                .map_err(|_| format!("{kind} entity without an id"))?;
            let created = match kind.as_str() {
                "client" => {
                    let entity = create_client(spec, fixture)?;
                    await_min_pool_size(spec, &entity).await?;
                    Entity::Client(entity)
                }
                "database" => {
                    known_keys(
                        kind,
                        spec,
                        &["id", "client", "databaseName", "databaseOptions"],
                    )?;
                    let client = self.client(spec.get_str("client").map_err(|e| e.to_string())?)?;
                    let name = spec.get_str("databaseName").map_err(|e| e.to_string())?;
                    let options = match spec.get_document("databaseOptions") {
                        Ok(options) => database_options(options)?,
                        Err(_) => DatabaseOptions::default(),
                    };
                    Entity::Database(client.client.database_with_options(name, options))
                }
                "collection" => {
                    known_keys(
                        kind,
                        spec,
                        &["id", "database", "collectionName", "collectionOptions"],
                    )?;
                    let database_id = spec.get_str("database").map_err(|e| e.to_string())?;
                    let Entity::Database(database) = self.get(database_id)? else {
                        return Err(format!("entity {database_id:?} is not a database"));
                    };
                    let name = spec.get_str("collectionName").map_err(|e| e.to_string())?;
                    let options = match spec.get_document("collectionOptions") {
                        Ok(options) => collection_options(options)?,
                        Err(_) => CollectionOptions::default(),
                    };
                    Entity::Collection(database.collection_with_options(name, options))
                }
                "session" => Entity::Session(self.create_session(spec).await?),
                "bucket" => Entity::Bucket(crate::ops::gridfs::create_bucket(spec, self)?),
                "thread" => {
                    known_keys(kind, spec, &["id"])?;
                    Entity::Thread(ThreadEntity::default())
                }
                other => {
                    return Err(format!(
                        "entity type {other:?} is not supported by this runner"
                    ));
                }
            };
            self.insert(id, created)?;
        }
        Ok(())
    }
}

impl EntityMap {
    async fn create_session(&self, spec: &Document) -> Result<SessionEntity, String> {
        known_keys("session", spec, &["id", "client", "sessionOptions"])?;
        let client = self.client(spec.get_str("client").map_err(|e| e.to_string())?)?;
        let mut options = SessionOptions::default();
        if let Ok(given) = spec.get_document("sessionOptions") {
            for (key, value) in given {
                match (key.as_str(), value) {
                    ("causalConsistency", Bson::Boolean(on)) => {
                        options = options.causal_consistency(*on);
                    }
                    ("snapshot", Bson::Boolean(on)) => options = options.snapshot(*on),
                    ("snapshotTime", Bson::String(entity)) => {
                        let Some(Bson::Timestamp(time)) = self.bson_entity(entity) else {
                            return Err(format!(
                                "sessionOptions.snapshotTime: {entity:?} is not a saved timestamp"
                            ));
                        };
                        options = options.snapshot_time(time);
                    }
                    ("defaultTimeoutMS", value) => {
                        options = options.default_timeout(millis("defaultTimeoutMS", value)?);
                    }
                    ("defaultTransactionOptions", Bson::Document(given)) => {
                        let defaults = crate::ops::transaction_options_of(given)?;
                        options = options.default_transaction_options(defaults);
                    }
                    (other, _) => {
                        return Err(format!(
                            "sessionOptions.{other} is not supported by this runner"
                        ));
                    }
                }
            }
        }
        let session = client
            .client
            .start_session_with_options(options)
            .await
            .map_err(|e| format!("cannot start a session: {e}"))?;
        Ok(SessionEntity {
            lsid: session.id().clone(),
            session: Arc::new(tokio::sync::Mutex::new(Some(session))),
        })
    }
}

impl EntityValues for EntityMap {
    fn session_lsid(&self, id: &str) -> Option<Document> {
        match self.entities.get(id) {
            Some(Entity::Session(session)) => Some(session.lsid.clone()),
            _ => None,
        }
    }

    fn bson_entity(&self, id: &str) -> Option<Bson> {
        match self.entities.get(id) {
            Some(Entity::Bson(value)) => Some(value.clone()),
            _ => None,
        }
    }
}

fn known_keys(kind: &str, spec: &Document, known: &[&str]) -> Result<(), String> {
    match spec.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(format!(
            "{kind} entity: `{unknown}` is not supported by this runner"
        )),
        None => Ok(()),
    }
}

fn collection_options(options: &Document) -> Result<CollectionOptions, String> {
    let mut result = CollectionOptions::default();
    for (key, value) in options {
        match (key.as_str(), value) {
            ("writeConcern", Bson::Document(wc)) => {
                result = result.write_concern(write_concern(wc)?)
            }
            ("readConcern", Bson::Document(rc)) => {
                let level = rc
                    .get_str("level")
                    .map_err(|_| "collectionOptions.readConcern needs a level".to_owned())?;
                result = result.read_concern(ReadConcern::new(ReadConcernLevel::parse(level)));
            }
            ("readPreference", Bson::Document(rp)) => {
                result = result.selection_criteria(crate::ops::read_preference(rp)?)
            }
            ("timeoutMS", value) => result = result.timeout(millis("timeoutMS", value)?),
            (other, _) => {
                return Err(format!(
                    "collectionOptions.{other} is not supported by this runner"
                ));
            }
        }
    }
    Ok(result)
}

fn database_options(options: &Document) -> Result<DatabaseOptions, String> {
    let mut result = DatabaseOptions::default();
    for (key, value) in options {
        match (key.as_str(), value) {
            ("writeConcern", Bson::Document(wc)) => {
                result = result.write_concern(write_concern(wc)?)
            }
            ("readConcern", Bson::Document(rc)) => {
                let level = rc
                    .get_str("level")
                    .map_err(|_| "databaseOptions.readConcern needs a level".to_owned())?;
                result = result.read_concern(ReadConcern::new(ReadConcernLevel::parse(level)));
            }
            ("readPreference", Bson::Document(rp)) => {
                result = result.selection_criteria(crate::ops::read_preference(rp)?)
            }
            ("timeoutMS", value) => result = result.timeout(millis("timeoutMS", value)?),
            (other, _) => {
                return Err(format!(
                    "databaseOptions.{other} is not supported by this runner"
                ));
            }
        }
    }
    Ok(result)
}

/// A non-negative number of milliseconds.
fn millis(key: &str, value: &Bson) -> Result<Duration, String> {
    crate::expect_error::integer(value)
        .and_then(|n| u64::try_from(n).ok())
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{key} must be a non-negative integer, found {value}"))
}

fn create_client(spec: &Document, fixture: &Fixture) -> Result<ClientEntity, String> {
    known_keys(
        "client",
        spec,
        &[
            "id",
            "uriOptions",
            "useMultipleMongoses",
            "observeEvents",
            "ignoreCommandMonitoringEvents",
            "observeSensitiveCommands",
            "awaitMinPoolSizeMS",
            "serverApi",
            "observeLogMessages",
            "observeTracingMessages",
        ],
    )?;
    let mut uri_options = spec.get_document("uriOptions").cloned().unwrap_or_default();
    let direct_connection = uri_options
        .get_bool("directConnection")
        .is_ok_and(|direct| direct);
    let uri = fixture.client_uri(spec.get_bool("useMultipleMongoses").ok(), direct_connection)?;
    if fixture.fast_heartbeat() && !uri_options.contains_key("heartbeatFrequencyMS") {
        uri_options.insert("heartbeatFrequencyMS", FAST_HEARTBEAT_MS);
    }
    let uri = crate::oidc::client_uri(uri, &mut uri_options);
    let uri = with_uri_options(&uri, &uri_options)?;
    let strings = |key: &str| -> Vec<String> {
        spec.get_array(key)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let observation = Observation {
        observe: strings("observeEvents"),
        ignore_commands: strings("ignoreCommandMonitoringEvents"),
        observe_sensitive: spec.get_bool("observeSensitiveCommands").unwrap_or(false),
    };
    let listener = Arc::new(EntityListener::new(observation));
    let options = match steadfast_core::options::ClientOptions::parse(&uri) {
        Ok(steadfast_core::options::ParsedUri::Complete { options, .. }) => options,
        Ok(_) => return Err(format!("{uri} needs SRV resolution")),
        Err(e) => return Err(format!("invalid client URI {uri}: {e}")),
    };
    let mut options = steadfast::options::ClientOptions::from(options);
    // The command logging suite's README: run with a large document length, so that whole
    // replies (a replica set's hello is about 1000 bytes) can be matched.
    options.tracing_max_document_length_bytes = Some(crate::logs::MAX_DOCUMENT_LENGTH);
    let tracing = match spec.get_document("observeTracingMessages") {
        Ok(observe) => {
            let (tracing, otel) = crate::spans::ClientTracing::new(observe)?;
            options.tracing = Some(otel);
            Some(tracing)
        }
        Err(_) => None,
    };
    let mut builder = Client::builder(options).event_listener(listener.clone());
    if let Ok(api) = spec.get_document("serverApi") {
        builder = builder.server_api(crate::server_api::parse(api)?);
    }
    let observe_logs = spec.get_document("observeLogMessages").ok();
    if observe_logs.is_some() {
        crate::logs::start_capture();
    }
    let client = builder
        .build()
        .map_err(|e| format!("cannot create client: {e}"))?;
    if let Some(levels) = observe_logs {
        crate::logs::observe(client.topology_id(), levels)?;
    }
    Ok(ClientEntity {
        client,
        listener,
        tracing,
    })
}

/// `awaitMinPoolSizeMS`: waits (at most that long) until minPoolSize connections are ready, so
/// that the test's operations do not pay for establishing them.
async fn await_min_pool_size(spec: &Document, entity: &ClientEntity) -> Result<(), String> {
    let Some(limit) = spec.get("awaitMinPoolSizeMS") else {
        return Ok(());
    };
    let limit = millis("awaitMinPoolSizeMS", limit)?;
    let min_pool_size = usize::try_from(entity.client.options().min_pool_size).unwrap_or(0);
    if min_pool_size > 0 {
        entity
            .listener
            .wait_for_ready_connections(min_pool_size, limit)
            .await;
    }
    Ok(())
}

/// Appends `uriOptions` to a connection string, overriding options it already has.
pub(crate) fn with_uri_options(uri: &str, options: &Document) -> Result<String, String> {
    let (base, query) = uri.split_once('?').unwrap_or((uri, ""));
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    for (key, value) in options {
        pairs.retain(|(k, _)| !k.eq_ignore_ascii_case(key));
        let values = match value {
            Bson::Array(items) => items.iter().map(uri_value).collect::<Result<Vec<_>, _>>()?,
            other => vec![uri_value(other)?],
        };
        pairs.extend(values.into_iter().map(|v| (key.clone(), v)));
    }
    let query: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    let base = if base.ends_with('/') {
        base.to_owned()
    } else {
        format!("{base}/")
    };
    if query.is_empty() {
        return Ok(base);
    }
    Ok(format!("{base}?{}", query.join("&")))
}

fn uri_value(value: &Bson) -> Result<String, String> {
    match value {
        Bson::String(s) => Ok(s.clone()),
        Bson::Boolean(b) => Ok(b.to_string()),
        Bson::Int32(n) => Ok(n.to_string()),
        Bson::Int64(n) => Ok(n.to_string()),
        Bson::Double(n) => Ok(n.to_string()),
        Bson::Document(d) if d.contains_key("$$placeholder") => {
            Err("$$placeholder URI options are not supported by this runner".to_owned())
        }
        other => Err(format!("unsupported URI option value {other}")),
    }
}
