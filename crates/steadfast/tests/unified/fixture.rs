//! One blackpipe deployment per test run: starting it (with authentication and a test user
//! when the test requires `auth`), loading `initialData` through its store, client connection
//! strings (with the user's credentials), fail points (set through the test's client, turned
//! off through a separate client connected directly to the node), and reading `outcome` back.

use blackpipe::auth::User;
use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, Document, doc};
use steadfast::Client;

use crate::matcher::exactly_equal;
use crate::model::CollectionData;
use crate::requirements::Topology;

/// A running deployment and the fail points set on it.
pub(crate) struct Fixture {
    deployment: Deployment,
    topology: Topology,
    /// Fail points to turn off at the end: the client that set it and the fail point's name.
    fail_points: Vec<(Client, String)>,
    /// Whether client entities without their own `heartbeatFrequencyMS` get a short one.
    fast_heartbeat: bool,
    /// The deployment requires authentication: connection strings carry [`TEST_USER`].
    auth: bool,
}

/// The user of deployments that require authentication, in `admin`, with both SCRAM
/// mechanisms: `(name, password)`.
const TEST_USER: (&str, &str) = ("unified", "runner-pw");

/// The `heartbeatFrequencyMS` given to clients of tests that set fail points (the smallest
/// value the URI options specification allows).
pub(crate) const FAST_HEARTBEAT_MS: i32 = 500;

impl Fixture {
    /// Starts a fresh deployment of `topology`, requiring authentication if `auth`, and
    /// waits for its primary (replica sets).
    pub(crate) async fn start(
        topology: Topology,
        auth: bool,
        oidc: bool,
    ) -> Result<Fixture, String> {
        let config = match topology {
            Topology::ReplicaSet => DeploymentConfig::replica_set(3),
            Topology::Sharded => DeploymentConfig::sharded(2),
            Topology::Single => DeploymentConfig::standalone(),
            Topology::LoadBalanced => crate::load_balanced::config(),
        };
        let config = if auth {
            config.with_user(User::new(TEST_USER.0, TEST_USER.1))
        } else {
            config
        };
        let config = if oidc {
            crate::oidc::configure(config)
        } else {
            config
        };
        let deployment = Deployment::start(config)
            .await
            .map_err(|e| format!("cannot start a {topology} deployment: {e}"))?;
        if oidc {
            crate::oidc::write_token(&deployment)?;
        }
        if topology == Topology::ReplicaSet {
            deployment.wait_for_primary().await;
        }
        Ok(Fixture {
            deployment,
            topology,
            fail_points: Vec::new(),
            fast_heartbeat: false,
            auth,
        })
    }

    /// Makes client entities created from now on check their servers every
    /// [`FAST_HEARTBEAT_MS`] unless their `uriOptions` set `heartbeatFrequencyMS`.
    pub(crate) fn set_fast_heartbeat(&mut self, on: bool) {
        self.fast_heartbeat = on;
    }

    /// Whether client entities get a short heartbeat.
    pub(crate) fn fast_heartbeat(&self) -> bool {
        self.fast_heartbeat
    }

    /// The connection string a client entity starts from, before its `uriOptions`:
    /// `useMultipleMongoses: false` on a sharded cluster names only the first router; a
    /// standalone is named without `directConnection`; a client with `directConnection: true`
    /// gets a single seed (the format's rule: a direct connection takes exactly one host).
    pub(crate) fn client_uri(
        &self,
        use_multiple_mongoses: Option<bool>,
        direct_connection: bool,
    ) -> Result<String, String> {
        // A standalone is named by its address alone, as test environments give mongod:
        // without directConnection, the client starts Unknown and discovers it (the SDAM
        // suite's topology events expect that), instead of starting Single.
        let only_first = match self.topology {
            Topology::Sharded => use_multiple_mongoses == Some(false),
            Topology::Single => true,
            Topology::ReplicaSet => false,
            Topology::LoadBalanced => {
                let uri = crate::load_balanced::uri(&self.deployment, use_multiple_mongoses)?;
                return Ok(self.with_credentials(&uri));
            }
        } || direct_connection;
        if only_first {
            let first = self.first_host()?;
            return Ok(self.with_credentials(&format!("mongodb://{first}/")));
        }
        Ok(self.with_credentials(&self.deployment.uri()))
    }

    /// `uri` with `user:password@` when the deployment requires authentication.
    fn with_credentials(&self, uri: &str) -> String {
        if !self.auth {
            return uri.to_owned();
        }
        let (user, password) = TEST_USER;
        uri.replacen("mongodb://", &format!("mongodb://{user}:{password}@"), 1)
    }

    /// The node a `failPoint` operation targets: the primary, the standalone, or the router
    /// that single-mongos clients use.
    fn fail_point_host(&self) -> Result<String, String> {
        match self.topology {
            Topology::ReplicaSet => {
                let primary = self
                    .deployment
                    .primary()
                    .ok_or("the replica set has no primary for the fail point")?;
                self.deployment
                    .host(primary)
                    .ok_or_else(|| "the primary has no address".to_owned())
            }
            Topology::Sharded | Topology::Single | Topology::LoadBalanced => self.first_host(),
        }
    }

    fn first_host(&self) -> Result<String, String> {
        self.deployment
            .hosts()
            .into_iter()
            .next()
            .ok_or_else(|| "the deployment has no node".to_owned())
    }

    /// Sends `configureFailPoint` through `client` (the test's client entity, as the format
    /// requires: its connection checkouts are part of what tests count), and remembers a
    /// separate client connected directly to the node it targets so that
    /// [`Fixture::disable_fail_points`] turns it off there whatever the entity does meanwhile.
    pub(crate) async fn set_fail_point(
        &mut self,
        client: &Client,
        command: Document,
    ) -> Result<(), String> {
        let name = command
            .get_str("configureFailPoint")
            .map_err(|_| "failPoint without configureFailPoint".to_owned())?
            .to_owned();
        // Through a balancer the fail point lands on whichever router the connection is bound
        // to: it is turned off on every router.
        let hosts = match self.topology {
            Topology::LoadBalanced => self.deployment.hosts(),
            _ => vec![self.fail_point_host()?],
        };
        let mut directs = Vec::with_capacity(hosts.len());
        for host in hosts {
            let uri = self.with_credentials(&format!("mongodb://{host}/?directConnection=true"));
            let direct = Client::with_uri_str(&uri)
                .await
                .map_err(|e| format!("cannot create the fail point client: {e}"))?;
            directs.push((direct, name.clone()));
        }
        client
            .database("admin")
            .run_command(command)
            .await
            .map_err(|e| format!("configureFailPoint failed: {e}"))?;
        self.fail_points.extend(directs);
        Ok(())
    }

    /// Sets a fail point on `host` (a session's pinned mongos: `targetedFailPoint`), through
    /// a client connected directly to it, which also turns it off after the test.
    pub(crate) async fn set_targeted_fail_point(
        &mut self,
        host: &str,
        command: Document,
    ) -> Result<(), String> {
        let name = command
            .get_str("configureFailPoint")
            .map_err(|_| "targetedFailPoint without configureFailPoint".to_owned())?
            .to_owned();
        let uri = self.with_credentials(&format!("mongodb://{host}/?directConnection=true"));
        let direct = Client::with_uri_str(&uri)
            .await
            .map_err(|e| format!("cannot create the fail point client: {e}"))?;
        direct
            .database("admin")
            .run_command(command)
            .await
            .map_err(|e| format!("configureFailPoint on {host} failed: {e}"))?;
        self.fail_points.push((direct, name));
        Ok(())
    }

    /// The names of the collections of `db`, read from the deployment directly.
    pub(crate) fn collection_names(&self, db: &str) -> Result<Vec<String>, String> {
        let reply = self.execute_ok(db, doc! { "listCollections": 1 }, "listCollections")?;
        let batch = reply
            .get_document("cursor")
            .and_then(|c| c.get_array("firstBatch"))
            .map_err(|_| format!("listCollections reply without a batch: {reply}"))?;
        Ok(batch
            .iter()
            .filter_map(|c| c.as_document()?.get_str("name").ok().map(str::to_owned))
            .collect())
    }

    /// The names of the indexes of `db.collection`, read from the deployment directly.
    pub(crate) fn index_names(&self, db: &str, collection: &str) -> Result<Vec<String>, String> {
        let reply = self.execute_ok(db, doc! { "listIndexes": collection }, "listIndexes")?;
        let batch = reply
            .get_document("cursor")
            .and_then(|c| c.get_array("firstBatch"))
            .map_err(|_| format!("listIndexes reply without a batch: {reply}"))?;
        Ok(batch
            .iter()
            .filter_map(|c| c.as_document()?.get_str("name").ok().map(str::to_owned))
            .collect())
    }

    /// Turns off every fail point set during the test, on the node it was set on.
    pub(crate) async fn disable_fail_points(&mut self) -> Result<(), String> {
        let mut problems = Vec::new();
        for (client, name) in self.fail_points.drain(..) {
            let off = doc! { "configureFailPoint": name.clone(), "mode": "off" };
            if let Err(e) = client.database("admin").run_command(off).await {
                problems.push(format!("turning off {name}: {e}"));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// Loads `initialData`: drop, create (with `createOptions`), insert.
    pub(crate) fn load(&self, data: &[CollectionData]) -> Result<(), String> {
        for collection in data {
            let db = collection.database.as_str();
            let name = collection.collection.as_str();
            for dropped in [
                name.to_owned(),
                format!("enxcol_.{name}.esc"),
                format!("enxcol_.{name}.ecoc"),
            ] {
                let reply = self.execute(db, doc! { "drop": dropped.clone() });
                // NamespaceNotFound (26) just means there was nothing to drop.
                if !is_ok(&reply) && reply.get_i32("code").ok() != Some(26) {
                    return Err(format!("initialData: dropping {db}.{dropped}: {reply}"));
                }
            }
            let mut create = doc! { "create": name };
            if let Some(options) = &collection.create_options {
                create.extend(options.clone());
            }
            self.execute_ok(db, create, "initialData: create")?;
            if !collection.documents.is_empty() {
                let insert = doc! {
                    "insert": name,
                    "documents": collection.documents.iter().cloned().map(Bson::Document).collect::<Vec<_>>(),
                };
                let reply = self.execute_ok(db, insert, "initialData: insert")?;
                if reply.contains_key("writeErrors") {
                    return Err(format!("initialData: insert into {db}.{name}: {reply}"));
                }
            }
        }
        Ok(())
    }

    /// Checks `outcome`: each collection holds exactly these documents, sorted by `_id`.
    pub(crate) fn check_outcome(&self, data: &[CollectionData]) -> Result<(), String> {
        for expected in data {
            let db = expected.database.as_str();
            let name = expected.collection.as_str();
            let find =
                doc! { "find": name, "filter": {}, "sort": { "_id": 1 }, "batchSize": i32::MAX };
            let reply = self.execute_ok(db, find, "outcome: find")?;
            let cursor = reply
                .get_document("cursor")
                .map_err(|_| format!("outcome: find reply without a cursor: {reply}"))?;
            if cursor.get_i64("id").unwrap_or(0) != 0 {
                return Err(format!("outcome: {db}.{name} did not fit in one batch"));
            }
            let actual = cursor
                .get_array("firstBatch")
                .map_err(|_| format!("outcome: find reply without firstBatch: {reply}"))?;
            let expected_docs: Vec<Bson> = expected
                .documents
                .iter()
                .cloned()
                .map(Bson::Document)
                .collect();
            exactly_equal(
                &Bson::Array(expected_docs.clone()),
                &Bson::Array(actual.clone()),
            )
            .map_err(|m| {
                format!(
                    "outcome of {db}.{name}: {m}; expected {}, found {}",
                    Bson::Array(expected_docs),
                    Bson::Array(actual.clone())
                )
            })?;
        }
        Ok(())
    }

    /// Stops every node.
    pub(crate) async fn stop(self) {
        self.deployment.stop().await;
    }

    fn execute(&self, db: &str, command: Document) -> Document {
        self.deployment.execute(db, &command)
    }

    fn execute_ok(&self, db: &str, command: Document, what: &str) -> Result<Document, String> {
        let reply = self.execute(db, command);
        if is_ok(&reply) {
            Ok(reply)
        } else {
            Err(format!("{what} on {db}: {reply}"))
        }
    }
}

fn is_ok(reply: &Document) -> bool {
    matches!(reply.get("ok"), Some(Bson::Double(ok)) if *ok == 1.0)
        || matches!(reply.get("ok"), Some(Bson::Int32(1)))
}

/// The server version blackpipe reports, read with `buildInfo` from a throwaway standalone.
pub(crate) async fn probe_version() -> Result<crate::requirements::Version, String> {
    let fixture = Fixture::start(Topology::Single, false, false).await?;
    let host = fixture.first_host()?;
    let result = async {
        let client = Client::with_uri_str(&format!("mongodb://{host}/?directConnection=true"))
            .await
            .map_err(|e| format!("cannot create a client: {e}"))?;
        let reply = client
            .database("admin")
            .run_command(doc! { "buildInfo": 1 })
            .await
            .map_err(|e| format!("buildInfo failed: {e}"))?;
        let parts: Vec<String> = match reply.get_array("versionArray") {
            Ok(parts) => parts.iter().take(3).map(|p| p.to_string()).collect(),
            Err(_) => vec![reply.get_str("version").unwrap_or_default().to_owned()],
        };
        crate::requirements::Version::parse(&parts.join("."))
    }
    .await;
    fixture.stop().await;
    result
}
