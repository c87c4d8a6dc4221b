//! OP_MSG: flag bits, a kind-0 body section, kind-1 document sequences and an optional CRC-32C.

use std::collections::HashSet;

use bson::RawDocumentBuf;

use crate::bson_check::{BsonValidation, check_bson};
use crate::read::{Reader, len_i64};
use crate::{HEADER_LEN, MsgFlags, WireError};

/// A kind-1 section: documents sent side by side instead of as an array in the body.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentSequence {
    /// Name of the command argument the documents belong to (for example `documents`).
    pub identifier: String,
    /// The documents, in order.
    pub documents: Vec<RawDocumentBuf>,
}

impl DocumentSequence {
    /// A sequence named `identifier` holding `documents`.
    #[must_use]
    pub fn new(identifier: impl Into<String>, documents: Vec<RawDocumentBuf>) -> Self {
        Self {
            identifier: identifier.into(),
            documents,
        }
    }

    /// Bytes of the section's payload, its int32 size field included (not the kind byte).
    fn payload_len(&self) -> usize {
        let documents: usize = self.documents.iter().map(|d| d.as_bytes().len()).sum();
        4 + self.identifier.len() + 1 + documents
    }
}

/// An OP_MSG message body.
#[derive(Debug, Clone, PartialEq)]
pub struct OpMsg {
    /// The flag bits. Set [`MsgFlags::CHECKSUM_PRESENT`] to have a CRC-32C appended on encode.
    pub flags: MsgFlags,
    /// The kind-0 section: the command or reply document.
    pub body: RawDocumentBuf,
    /// The kind-1 sections, encoded after the body in this order.
    pub sequences: Vec<DocumentSequence>,
}

/// The most kind-1 sections one OP_MSG may carry when decoded.
///
/// Real commands carry one or two (a client-level bulkWrite sends `ops` and `nsInfo`); the cap
/// is far above that yet keeps a hostile message of thousands of empty sequences from costing
/// more than a few identifiers' worth of work.
pub const MAX_DOCUMENT_SEQUENCES: usize = 64;

/// The most documents all the kind-1 sections of one OP_MSG may hold together when decoded.
///
/// Each decoded document is an allocation of its own, so a 48 MB frame of 5-byte empty
/// documents would otherwise become nearly ten million of them (over half a gigabyte) before
/// any command could refuse its batch. Ten times `maxWriteBatchSize` (100,000): every command a
/// server accepts fits, and a server can still answer an oversized batch with its own error.
pub const MAX_SEQUENCE_DOCUMENTS: usize = 1_000_000;

/// Section payload types.
const KIND_BODY: u8 = 0;
const KIND_SEQUENCE: u8 = 1;
/// Length of the CRC-32C trailer.
const CHECKSUM_LEN: usize = 4;

impl OpMsg {
    /// A message with no flags, `body` as its kind-0 section and no document sequence.
    #[must_use]
    pub fn new(body: RawDocumentBuf) -> Self {
        Self {
            flags: MsgFlags::empty(),
            body,
            sequences: Vec::new(),
        }
    }

    /// Adds a document sequence (builder style).
    #[must_use]
    pub fn with_sequence(mut self, sequence: DocumentSequence) -> Self {
        self.sequences.push(sequence);
        self
    }

    /// Sets flag bits (builder style).
    #[must_use]
    pub fn with_flags(mut self, flags: MsgFlags) -> Self {
        self.flags.insert(flags);
        self
    }

    /// The command name: the first key of the body, if the body has one.
    #[must_use]
    pub fn command_name(&self) -> Option<&str> {
        let first = self.body.iter_elements().next()?.ok()?;
        Some(first.key().as_str())
    }

    /// Whether the sender will send another message without waiting (moreToCome).
    #[must_use]
    pub fn more_to_come(&self) -> bool {
        self.flags.contains(MsgFlags::MORE_TO_COME)
    }

    /// Whether the requester accepts several replies (exhaustAllowed).
    #[must_use]
    pub fn exhaust_allowed(&self) -> bool {
        self.flags.contains(MsgFlags::EXHAUST_ALLOWED)
    }

    /// Length of the encoded message after the header: flags, sections and checksum.
    pub(crate) fn encoded_len(&self) -> usize {
        let sequences: usize = self.sequences.iter().map(|s| 1 + s.payload_len()).sum();
        let checksum = if self.flags.contains(MsgFlags::CHECKSUM_PRESENT) {
            CHECKSUM_LEN
        } else {
            0
        };
        4 + 1 + self.body.as_bytes().len() + sequences + checksum
    }

    /// Appends flags and sections; `frame_start` is where this message's header begins in
    /// `out`, so the checksum can cover the header too.
    pub(crate) fn encode_after_header(
        &self,
        frame_start: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), WireError> {
        out.extend_from_slice(&self.flags.bits().to_le_bytes());
        out.push(KIND_BODY);
        out.extend_from_slice(self.body.as_bytes());
        for sequence in &self.sequences {
            if sequence.identifier.as_bytes().contains(&0) {
                return Err(WireError::InvalidCString("document sequence identifier"));
            }
            let size = i32::try_from(sequence.payload_len()).map_err(|_| {
                WireError::invalid_length("document sequence size", len_i64(sequence.payload_len()))
            })?;
            out.push(KIND_SEQUENCE);
            out.extend_from_slice(&size.to_le_bytes());
            out.extend_from_slice(sequence.identifier.as_bytes());
            out.push(0);
            for document in &sequence.documents {
                out.extend_from_slice(document.as_bytes());
            }
        }
        if self.flags.contains(MsgFlags::CHECKSUM_PRESENT) {
            let covered = out.get(frame_start..).unwrap_or_default();
            let checksum = crc32c::crc32c(covered);
            out.extend_from_slice(&checksum.to_le_bytes());
        }
        Ok(())
    }

    /// Decodes an OP_MSG from its whole frame (header included, for the checksum).
    pub(crate) fn decode(frame: &[u8], validation: BsonValidation) -> Result<Self, WireError> {
        let after_header = frame.get(HEADER_LEN..).unwrap_or_default();
        let mut reader = Reader::new(after_header, "OP_MSG flags");
        let flags = MsgFlags::from_bits(reader.u32()?)?;
        let sections = if flags.contains(MsgFlags::CHECKSUM_PRESENT) {
            let covered_len = frame
                .len()
                .checked_sub(CHECKSUM_LEN)
                .filter(|&len| len >= HEADER_LEN + 4)
                .ok_or_else(|| {
                    WireError::truncated("OP_MSG checksum", CHECKSUM_LEN, reader.remaining())
                })?;
            let (covered, trailer) = frame.split_at(covered_len);
            let expected = u32::from_le_bytes(
                trailer
                    .try_into()
                    .map_err(|_| WireError::truncated("OP_MSG checksum", CHECKSUM_LEN, 0))?,
            );
            let actual = crc32c::crc32c(covered);
            if expected != actual {
                return Err(WireError::ChecksumMismatch { expected, actual });
            }
            covered.get(HEADER_LEN + 4..).unwrap_or_default()
        } else {
            reader.rest()
        };
        let (body, sequences) = decode_sections(sections, validation)?;
        Ok(Self {
            flags,
            body,
            sequences,
        })
    }
}

fn decode_sections(
    bytes: &[u8],
    validation: BsonValidation,
) -> Result<(RawDocumentBuf, Vec<DocumentSequence>), WireError> {
    let mut reader = Reader::new(bytes, "OP_MSG section");
    let mut body: Option<RawDocumentBuf> = None;
    let mut sequences: Vec<DocumentSequence> = Vec::new();
    let mut identifiers: HashSet<String> = HashSet::new();
    let mut documents_left = MAX_SEQUENCE_DOCUMENTS;
    while !reader.is_empty() {
        match reader.u8()? {
            KIND_BODY => {
                let document = check_bson(reader.bson_bytes()?, validation)?;
                if body.is_some() {
                    return Err(WireError::DuplicateBody);
                }
                body = Some(document.to_owned());
            }
            KIND_SEQUENCE => {
                if sequences.len() >= MAX_DOCUMENT_SEQUENCES {
                    return Err(WireError::TooManyDocumentSequences {
                        max: MAX_DOCUMENT_SEQUENCES,
                    });
                }
                let sequence = decode_sequence(&mut reader, validation, &mut documents_left)?;
                if !identifiers.insert(sequence.identifier.clone()) {
                    return Err(WireError::DuplicateSequenceIdentifier(sequence.identifier));
                }
                sequences.push(sequence);
            }
            other => return Err(WireError::InvalidSectionKind(other)),
        }
    }
    let body = body.ok_or(WireError::MissingBody)?;
    Ok((body, sequences))
}

/// Decodes one kind-1 section, spending one of `documents_left` per document.
fn decode_sequence(
    reader: &mut Reader<'_>,
    validation: BsonValidation,
    documents_left: &mut usize,
) -> Result<DocumentSequence, WireError> {
    let declared = reader.i32()?;
    // The size counts its own 4 bytes and at least the identifier's NUL, and must stay within
    // the message.
    let payload_len = usize::try_from(declared)
        .ok()
        .and_then(|size| size.checked_sub(4))
        .filter(|&len| len >= 1 && len <= reader.remaining())
        .ok_or_else(|| WireError::invalid_length("document sequence size", declared))?;
    let mut payload = Reader::new(reader.take(payload_len)?, "document sequence");
    let identifier = payload.cstr("document sequence identifier")?.to_owned();
    let mut documents = Vec::new();
    while !payload.is_empty() {
        *documents_left =
            documents_left
                .checked_sub(1)
                .ok_or(WireError::TooManySequenceDocuments {
                    max: MAX_SEQUENCE_DOCUMENTS,
                })?;
        let document = check_bson(payload.bson_bytes()?, validation)?;
        documents.push(document.to_owned());
    }
    Ok(DocumentSequence {
        identifier,
        documents,
    })
}
