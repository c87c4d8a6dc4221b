//! The entity map of one test: clients (with their event listeners), databases, collections
//! and saved results, created from `createEntities`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, Document};
use steadfast::options::{CollectionOptions, DatabaseOptions};
use steadfast::{Client, ClientOptions, Collection, Database};

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
}

/// One entity.
pub(crate) enum Entity {
    /// A client.
    Client(ClientEntity),
    /// A database.
    Database(Database),
    /// A collection of documents.
    Collection(Collection<Document>),
    /// A cursor (`createFindCursor` saved as an entity); `None` once closed.
    Cursor(Option<steadfast::Cursor<Document>>),
    /// A saved result.
    Bson(Bson),
}

impl Entity {
    fn kind(&self) -> &'static str {
        match self {
            Entity::Client(_) => "client",
            Entity::Database(_) => "database",
            Entity::Collection(_) => "collection",
            Entity::Cursor(_) => "cursor",
            Entity::Bson(_) => "BSON value",
        }
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
    ) -> Option<&mut Option<steadfast::Cursor<Document>>> {
        match self.entities.get_mut(id) {
            Some(Entity::Cursor(cursor)) => Some(cursor),
            _ => None,
        }
    }

    /// The client entity named `id`.
    pub(crate) fn client(&self, id: &str) -> Result<&ClientEntity, String> {
        match self.get(id)? {
            Entity::Client(c) => Ok(c),
            other => Err(format!("entity {id:?} is a {}, not a client", other.kind())),
        }
    }

    /// Shuts every client down (in creation order) and forgets every entity.
    pub(crate) async fn close(&mut self) {
        for id in std::mem::take(&mut self.order) {
            if let Some(Entity::Client(entity)) = self.entities.remove(&id) {
                entity.client.shutdown().await;
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

impl EntityValues for EntityMap {
    fn session_lsid(&self, _id: &str) -> Option<Document> {
        None
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
        ],
    )?;
    let uri = fixture.client_uri(spec.get_bool("useMultipleMongoses").ok())?;
    let mut uri_options = spec.get_document("uriOptions").cloned().unwrap_or_default();
    if fixture.fast_heartbeat() && !uri_options.contains_key("heartbeatFrequencyMS") {
        uri_options.insert("heartbeatFrequencyMS", FAST_HEARTBEAT_MS);
    }
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
    let options = match ClientOptions::parse(&uri) {
        Ok(steadfast_core::options::ParsedUri::Complete { options, .. }) => options,
        Ok(_) => return Err(format!("{uri} needs SRV resolution")),
        Err(e) => return Err(format!("invalid client URI {uri}: {e}")),
    };
    let client = Client::builder(options)
        .event_handler(listener.clone())
        .build()
        .map_err(|e| format!("cannot create client: {e}"))?;
    Ok(ClientEntity { client, listener })
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
