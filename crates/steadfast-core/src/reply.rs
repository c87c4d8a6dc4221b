//! What every command reply says about itself, read the same way by SDAM's error handling and
//! by the driver's reply interpretation.

use bson::{Bson, Document};

/// Whether a reply reports success: `ok` is 1 in any numeric type, or `true` (servers send
/// 1.0; older ones and proxies sometimes an integer or a boolean).
pub fn reply_is_ok(reply: &Document) -> bool {
    match reply.get("ok") {
        Some(Bson::Double(v)) => *v == 1.0,
        Some(Bson::Int32(v)) => *v == 1,
        Some(Bson::Int64(v)) => *v == 1,
        Some(Bson::Boolean(v)) => *v,
        _ => false,
    }
}
