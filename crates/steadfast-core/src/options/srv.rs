//! The pure rules of `mongodb+srv://` (initial-dns-seedlist-discovery.md). The DNS queries
//! themselves happen in the async crate; it hands the answers to
//! [`ConnectionString::resolve_srv`].

use rand::Rng;

use super::OptionsError;
use super::client::ClientOptions;
use super::uri::{ConnectionString, HostInfo};
use super::uri_options::UriOptions;
use crate::address::{AddressError, ServerAddress};

/// The service name queried when `srvServiceName` is not given.
pub const DEFAULT_SRV_SERVICE_NAME: &str = "mongodb";

/// The only options a TXT record may set.
const TXT_OPTIONS: &[&str] = &["authsource", "replicaset", "loadbalanced"];

/// The host name of a `mongodb+srv://` string and the domain its SRV targets must belong to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SrvHost {
    hostname: String,
    /// What every target must end with: `.` + the parent domain for names of three or more
    /// labels, `.` + the whole name for shorter ones (so targets are one level deeper).
    required_suffix: String,
}

impl SrvHost {
    /// Checks an SRV host name: exactly one host, no port, no IP literal, no empty label.
    ///
    /// # Errors
    /// [`OptionsError::InvalidSrvHost`] naming the host and the rule it breaks.
    pub fn parse(text: &str) -> Result<Self, OptionsError> {
        let invalid = |reason| OptionsError::InvalidSrvHost {
            host: text.to_string(),
            reason,
        };
        if text.contains(',') {
            return Err(invalid("mongodb+srv:// takes exactly one host name"));
        }
        if text.starts_with('[') {
            return Err(invalid(
                "mongodb+srv:// needs a DNS name, not an IP literal",
            ));
        }
        if text.contains(':') {
            return Err(invalid("mongodb+srv:// host names cannot have a port"));
        }
        if text.contains(['%', '/']) {
            return Err(invalid(
                "mongodb+srv:// needs a DNS name, not a socket path",
            ));
        }
        let hostname = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        let labels: Vec<&str> = hostname.split('.').collect();
        if labels
            .iter()
            .any(|l| l.is_empty() || l.contains(char::is_whitespace))
        {
            return Err(invalid(
                "every dot-separated part must be a non-empty DNS label",
            ));
        }
        let domain = if labels.len() >= 3 {
            labels[1..].join(".")
        } else {
            hostname.clone()
        };
        Ok(SrvHost {
            required_suffix: format!(".{domain}"),
            hostname,
        })
    }

    /// The host name, lower-cased, without a trailing dot. TXT records are queried here.
    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// The domain every SRV target must be inside.
    pub fn domain(&self) -> &str {
        &self.required_suffix[1..]
    }

    /// The name to query for SRV records: `_{service}._tcp.{hostname}`.
    pub fn srv_query_name(&self, service_name: &str) -> String {
        format!("_{service_name}._tcp.{}", self.hostname)
    }

    /// Checks one SRV answer and turns it into an address.
    ///
    /// # Errors
    /// [`OptionsError::SrvTargetOutsideDomain`] when the target is not strictly inside the
    /// domain; [`OptionsError::InvalidHost`] for port 0.
    pub fn check_target(&self, record: &SrvRecord) -> Result<ServerAddress, OptionsError> {
        let target = record.target.strip_suffix('.').unwrap_or(&record.target);
        let target = target.to_ascii_lowercase();
        if !target.ends_with(&self.required_suffix) {
            return Err(OptionsError::SrvTargetOutsideDomain {
                target,
                domain: self.domain().to_string(),
            });
        }
        if record.port == 0 {
            return Err(OptionsError::InvalidHost {
                reason: AddressError::InvalidPort(format!("{target}:0")),
                host: target,
            });
        }
        Ok(ServerAddress::tcp(target, record.port))
    }

    /// Checks every SRV answer (priority and weight are not part of the input: the
    /// specification says to ignore them). Duplicates are dropped.
    ///
    /// # Errors
    /// [`OptionsError::NoSrvRecords`] for an empty answer, or the first target error from
    /// [`SrvHost::check_target`]: one bad target rejects the whole answer.
    pub fn check_targets(&self, records: &[SrvRecord]) -> Result<Vec<ServerAddress>, OptionsError> {
        if records.is_empty() {
            return Err(OptionsError::NoSrvRecords(self.hostname.clone()));
        }
        let mut hosts: Vec<ServerAddress> = Vec::with_capacity(records.len());
        for record in records {
            let address = self.check_target(record)?;
            if !hosts.contains(&address) {
                hosts.push(address);
            }
        }
        Ok(hosts)
    }
}

/// One SRV answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrvRecord {
    /// The target host name (a trailing dot is accepted).
    pub target: String,
    /// The target port.
    pub port: u16,
}

/// What DNS said about a `mongodb+srv://` host name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SrvLookup {
    /// The SRV answers.
    pub srv_records: Vec<SrvRecord>,
    /// The TXT records; each is the list of its character strings, in order.
    pub txt_records: Vec<Vec<String>>,
}

/// Complete options from a `mongodb+srv://` string and its DNS answers.
#[derive(Clone, Debug)]
pub struct SrvResolution {
    /// The validated options; `hosts` holds the chosen SRV targets.
    pub options: ClientOptions,
    /// Warnings from the string and from the TXT record.
    pub warnings: Vec<String>,
}

/// Reads the TXT records of an SRV host name into options.
///
/// # Errors
/// [`OptionsError::MultipleTxtRecords`] for more than one record,
/// [`OptionsError::TxtOptionNotAllowed`] for an option other than authSource, replicaSet and
/// loadBalanced, and the parse errors of a connection string's options (a pair without `=`, an
/// empty authSource).
pub fn parse_txt_records(
    records: &[Vec<String>],
    warnings: &mut Vec<String>,
) -> Result<UriOptions, OptionsError> {
    let record = match records {
        [] => return Ok(UriOptions::default()),
        [one] => one.concat(),
        several => return Err(OptionsError::MultipleTxtRecords(several.len())),
    };
    for pair in record.split('&').filter(|p| !p.is_empty()) {
        let key = pair.split_once('=').map_or(pair, |(k, _)| k);
        if !TXT_OPTIONS.contains(&key.to_ascii_lowercase().as_str()) {
            return Err(OptionsError::TxtOptionNotAllowed(key.to_string()));
        }
    }
    UriOptions::parse(&record, warnings)
}

/// Picks the seed list: all hosts when `max_hosts` is absent, zero or not smaller than the
/// list, otherwise `max_hosts` of them chosen uniformly by a partial Fisher-Yates shuffle.
pub fn choose_hosts(
    mut hosts: Vec<ServerAddress>,
    max_hosts: Option<u32>,
    rng: &mut impl Rng,
) -> Vec<ServerAddress> {
    let limit = match max_hosts.map(|m| m as usize) {
        Some(m) if m > 0 && m < hosts.len() => m,
        _ => return hosts,
    };
    for i in 0..limit {
        let j = rng.random_range(i..hosts.len());
        hosts.swap(i, j);
    }
    hosts.truncate(limit);
    hosts
}

impl ConnectionString {
    /// For `mongodb+srv://`, the name to query for SRV records (`_{service}._tcp.{host}`).
    pub fn srv_query_name(&self) -> Option<String> {
        match &self.host_info {
            HostInfo::Srv(host) => Some(
                host.srv_query_name(
                    self.options
                        .srv_service_name
                        .as_deref()
                        .unwrap_or(DEFAULT_SRV_SERVICE_NAME),
                ),
            ),
            HostInfo::Seeds(_) => None,
        }
    }

    /// Finishes a `mongodb+srv://` string with its DNS answers: checks the targets, applies
    /// the TXT options the string does not set itself, chooses at most `srvMaxHosts` hosts
    /// (`rng` drives the shuffle), and validates the result. TLS is on unless the string says
    /// `tls=false` (a TXT record cannot change it).
    ///
    /// # Errors
    /// [`OptionsError::NotSrv`] for a `mongodb://` string; the target and TXT errors of
    /// [`SrvHost::check_targets`] and [`parse_txt_records`]; any validation error of the
    /// combined options (for example `loadBalanced=true` from TXT with several targets).
    pub fn resolve_srv(
        &self,
        lookup: &SrvLookup,
        rng: &mut impl Rng,
    ) -> Result<SrvResolution, OptionsError> {
        let HostInfo::Srv(srv_host) = &self.host_info else {
            return Err(OptionsError::NotSrv);
        };
        let mut warnings = self.warnings.clone();
        let txt = parse_txt_records(&lookup.txt_records, &mut warnings)?;
        let mut merged = self.options.clone();
        // Options in the string win over the TXT record.
        merged.auth_source = merged.auth_source.or(txt.auth_source);
        merged.replica_set = merged.replica_set.or(txt.replica_set);
        merged.load_balanced = merged.load_balanced.or(txt.load_balanced);
        let hosts = srv_host.check_targets(&lookup.srv_records)?;
        let hosts = choose_hosts(hosts, merged.srv_max_hosts, rng);
        let options = ClientOptions::from_parts(
            hosts,
            Some(srv_host.clone()),
            self.user_info.as_ref(),
            self.default_database.as_deref(),
            &merged,
        )?;
        options.validate()?;
        Ok(SrvResolution { options, warnings })
    }
}
