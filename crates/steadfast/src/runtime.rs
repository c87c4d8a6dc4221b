//! The driver's only source of randomness (and, later, of clocks, sleeps and spawns): pure code
//! elsewhere takes these values as arguments.

use base64::Engine as _;
use rand::RngCore as _;

/// A fresh SCRAM client nonce: 24 bytes from the thread-local CSPRNG, base64-encoded (so it
/// never contains the ',' that would break the SCRAM message syntax).
pub(crate) fn scram_nonce() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
