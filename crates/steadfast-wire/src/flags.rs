//! OP_MSG flag bits.

use crate::WireError;

/// The `flagBits` of an OP_MSG.
///
/// The low 16 bits are "required": a receiver must fail on any it does not understand. The high
/// 16 bits are optional and ignored when unknown. [`MsgFlags::from_bits`] enforces that rule;
/// unknown optional bits are kept so that a decoded message re-encodes to the same bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MsgFlags(u32);

impl MsgFlags {
    /// Bit 0: a CRC-32C checksum follows the sections.
    pub const CHECKSUM_PRESENT: Self = Self(1);
    /// Bit 1: the sender will send another message without waiting for a reply.
    pub const MORE_TO_COME: Self = Self(1 << 1);
    /// Bit 16: the requester accepts several replies (moreToCome) to this request.
    pub const EXHAUST_ALLOWED: Self = Self(1 << 16);

    /// Required bits (0 to 15) that this crate understands.
    const KNOWN_REQUIRED: u32 = Self::CHECKSUM_PRESENT.0 | Self::MORE_TO_COME.0;
    /// The required half of the flag word.
    const REQUIRED_MASK: u32 = 0xFFFF;

    /// No flag set.
    #[must_use]
    pub const fn empty() -> Self {
        Self(0)
    }

    /// Interprets a received flag word.
    ///
    /// # Errors
    ///
    /// [`WireError::UnsupportedFlags`] if any required bit other than checksumPresent and
    /// moreToCome is set.
    pub const fn from_bits(bits: u32) -> Result<Self, WireError> {
        if bits & Self::REQUIRED_MASK & !Self::KNOWN_REQUIRED != 0 {
            Err(WireError::UnsupportedFlags(bits))
        } else {
            Ok(Self(bits))
        }
    }

    /// The raw flag word.
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set in `self`.
    #[must_use]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Sets the bits of `other`.
    pub fn insert(&mut self, other: Self) {
        self.0 |= other.0;
    }

    /// Clears the bits of `other`.
    pub fn remove(&mut self, other: Self) {
        self.0 &= !other.0;
    }

    /// Returns `self` with the bits of `other` set or cleared.
    #[must_use]
    pub const fn with(self, other: Self, on: bool) -> Self {
        if on {
            Self(self.0 | other.0)
        } else {
            Self(self.0 & !other.0)
        }
    }
}

impl std::ops::BitOr for MsgFlags {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for MsgFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}
