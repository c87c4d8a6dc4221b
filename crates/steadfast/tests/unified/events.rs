//! Observed events in a driver-neutral form, and `expectEvents` checking.

use bson::{Bson, Document, doc};

use crate::matcher::{EntityValues, match_root};

/// Commands whose events are never observed (command-logging-and-monitoring "Security").
const SENSITIVE_COMMANDS: &[&str] = &[
    "authenticate",
    "saslstart",
    "saslcontinue",
    "getnonce",
    "createuser",
    "updateuser",
    "copydbgetnonce",
    "copydbsaslstart",
    "copydb",
];

/// One event a client entity observed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Observed {
    /// A command event.
    Command(CommandObserved),
    /// A connection pool event, by its unified-format name (`connectionCheckedOutEvent`...).
    Cmap {
        /// The unified-format name of the event.
        name: &'static str,
        /// Assertable fields (`reason`, `interruptInUseConnections`, `hasServiceId`).
        fields: Document,
    },
    /// A topology (SDAM) event, by its unified-format name (`serverDescriptionChangedEvent`...).
    Sdam {
        /// The unified-format name of the event.
        name: &'static str,
        /// Assertable fields (`previousDescription`/`newDescription` as `{type}` documents,
        /// `awaited`).
        fields: Document,
    },
}

/// Which command event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommandStage {
    /// `commandStartedEvent`.
    Started,
    /// `commandSucceededEvent`.
    Succeeded,
    /// `commandFailedEvent`.
    Failed,
}

impl CommandStage {
    /// The unified-format name.
    pub(crate) fn spec_name(self) -> &'static str {
        match self {
            CommandStage::Started => "commandStartedEvent",
            CommandStage::Succeeded => "commandSucceededEvent",
            CommandStage::Failed => "commandFailedEvent",
        }
    }
}

/// A command event's assertable parts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommandObserved {
    /// Started, succeeded or failed.
    pub(crate) stage: CommandStage,
    /// The command name.
    pub(crate) command_name: String,
    /// The database.
    pub(crate) database_name: String,
    /// The command (started) or reply (succeeded); empty for failed events.
    pub(crate) document: Document,
    /// Whether the event carries a service id.
    pub(crate) has_service_id: bool,
    /// Whether the event carries the server's connection id.
    pub(crate) has_server_connection_id: bool,
}

impl Observed {
    /// The unified-format name of the event.
    pub(crate) fn spec_name(&self) -> &'static str {
        match self {
            Observed::Command(c) => c.stage.spec_name(),
            Observed::Cmap { name, .. } | Observed::Sdam { name, .. } => name,
        }
    }

    /// The `eventType` of `expectEvents` this event belongs to.
    pub(crate) fn event_type(&self) -> &'static str {
        match self {
            Observed::Command(_) => "command",
            Observed::Cmap { .. } => "cmap",
            Observed::Sdam { .. } => "sdam",
        }
    }
}

/// How a client entity filters what it records (`observeEvents`,
/// `ignoreCommandMonitoringEvents`, `observeSensitiveCommands`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Observation {
    /// Event names to record.
    pub(crate) observe: Vec<String>,
    /// Command names never recorded (`configureFailPoint` is always among them).
    pub(crate) ignore_commands: Vec<String>,
    /// Whether sensitive commands are recorded.
    pub(crate) observe_sensitive: bool,
}

impl Observation {
    /// Whether `event` is recorded.
    pub(crate) fn keeps(&self, event: &Observed) -> bool {
        if !self.observe.iter().any(|n| n == event.spec_name()) {
            return false;
        }
        let Observed::Command(command) = event else {
            return true;
        };
        if command.command_name == "configureFailPoint"
            || self.ignore_commands.contains(&command.command_name)
        {
            return false;
        }
        self.observe_sensitive || !is_sensitive(command)
    }
}

fn is_sensitive(command: &CommandObserved) -> bool {
    let name = command.command_name.to_ascii_lowercase();
    if SENSITIVE_COMMANDS.contains(&name.as_str()) {
        return true;
    }
    // hello carrying speculativeAuthenticate is redacted to an empty document.
    matches!(name.as_str(), "hello" | "ismaster")
        && command.document.is_empty()
        && command.stage != CommandStage::Failed
}

/// Checks one `expectedEventsForClient` against what its client recorded.
pub(crate) fn check(
    expected: &Document,
    observed: &[Observed],
    entities: &dyn EntityValues,
) -> Result<(), String> {
    let event_type = expected.get_str("eventType").unwrap_or("command");
    let events = match expected.get("events") {
        Some(Bson::Array(events)) => events,
        _ => return Err("expectEvents entry without an events array".to_owned()),
    };
    let ignore_extra = expected.get_bool("ignoreExtraEvents").unwrap_or(false);
    if !matches!(event_type, "command" | "cmap" | "sdam") {
        return Err(format!(
            "eventType {event_type:?} is not supported by this runner"
        ));
    }
    let actual: Vec<&Observed> = observed
        .iter()
        .filter(|e| e.event_type() == event_type)
        .collect();
    for (index, expected) in events.iter().enumerate() {
        let Some(event) = actual.get(index) else {
            return Err(format!(
                "event {index}: expected {expected}, but only {} {event_type} events were observed: {}",
                actual.len(),
                summary(&actual)
            ));
        };
        let Bson::Document(expected) = expected else {
            return Err(format!("event {index}: not a document"));
        };
        check_one(expected, event, entities).map_err(|e| {
            format!(
                "event {index} ({}): {e}; observed: {}",
                event.spec_name(),
                summary(&actual)
            )
        })?;
    }
    if !ignore_extra && actual.len() > events.len() {
        return Err(format!(
            "{} {event_type} events observed, {} expected; observed: {}",
            actual.len(),
            events.len(),
            summary(&actual)
        ));
    }
    Ok(())
}

/// Whether at least as many events of the entry's type were observed as it expects.
pub(crate) fn observed_enough(expected: &Document, observed: &[Observed]) -> bool {
    let wanted = expected.get_array("events").map_or(0, Vec::len);
    let event_type = expected.get_str("eventType").unwrap_or("command");
    observed
        .iter()
        .filter(|e| e.event_type() == event_type)
        .count()
        >= wanted
}

/// How many of `observed` match `expected` (an `expectedEvent` document, as `waitForEvent` and
/// `assertEventCount` give it).
pub(crate) fn count_matching(
    expected: &Document,
    observed: &[Observed],
    entities: &dyn EntityValues,
) -> usize {
    observed
        .iter()
        .filter(|event| check_one(expected, event, entities).is_ok())
        .count()
}

fn check_one(
    expected: &Document,
    actual: &Observed,
    entities: &dyn EntityValues,
) -> Result<(), String> {
    let mut entries = expected.iter();
    let (Some((name, assertions)), None) = (entries.next(), entries.next()) else {
        return Err("an expected event must have exactly one key".to_owned());
    };
    if name != actual.spec_name() {
        return Err(format!(
            "expected a {name}, observed a {}",
            actual.spec_name()
        ));
    }
    let Bson::Document(assertions) = assertions else {
        return Err(format!("{name}: assertions must be a document"));
    };
    let (fields, document_field) = match actual {
        Observed::Command(c) => {
            let mut fields = doc! {
                "commandName": c.command_name.clone(),
                "databaseName": c.database_name.clone(),
                "hasServiceId": c.has_service_id,
                "hasServerConnectionId": c.has_server_connection_id,
            };
            let document_field = match c.stage {
                CommandStage::Started => Some("command"),
                CommandStage::Succeeded => Some("reply"),
                CommandStage::Failed => None,
            };
            if let Some(field) = document_field {
                fields.insert(field, c.document.clone());
            }
            (fields, document_field)
        }
        Observed::Cmap { fields, .. } | Observed::Sdam { fields, .. } => (fields.clone(), None),
    };
    for (key, value) in assertions {
        if Some(key.as_str()) == document_field {
            match_root(value, fields.get(key), entities).map_err(|m| format!("{key}: {m}"))?;
            continue;
        }
        let Some(actual) = fields.get(key) else {
            return Err(format!("{key}: not an assertable field of {name}"));
        };
        // Descriptions are asserted by the fields given (`newDescription: {type: Unknown}`,
        // or `{}` for any); other values must be equal.
        if let Bson::Document(_) = value {
            match_root(value, Some(actual), entities).map_err(|m| format!("{key}: {m}"))?;
        } else if value != actual {
            return Err(format!("field `{key}`: expected {value}, got {actual}"));
        }
    }
    Ok(())
}

fn summary(events: &[&Observed]) -> String {
    let names: Vec<String> = events
        .iter()
        .map(|e| match e {
            Observed::Command(c) => format!("{}({})", c.stage.spec_name(), c.command_name),
            Observed::Cmap { name, .. } | Observed::Sdam { name, .. } => (*name).to_owned(),
        })
        .collect();
    format!("[{}]", names.join(", "))
}
