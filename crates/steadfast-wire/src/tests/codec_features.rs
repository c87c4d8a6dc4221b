//! Codecs left out of the build (`cargo test -p steadfast-wire --no-default-features`): each
//! is an error naming it, on both sides, and the built ones still work.

use super::*;
use crate::Compressor;

const EVERY_CODEC: [Compressor; 3] = [
    Compressor::Snappy,
    Compressor::Zlib { level: None },
    Compressor::Zstd { level: None },
];

#[test]
fn is_built_follows_the_cargo_features() {
    assert_eq!(Compressor::Snappy.is_built(), cfg!(feature = "snappy"));
    assert_eq!(
        Compressor::Zlib { level: None }.is_built(),
        cfg!(feature = "zlib")
    );
    assert_eq!(
        Compressor::Zstd { level: None }.is_built(),
        cfg!(feature = "zstd")
    );
}

#[test]
fn compressing_with_a_codec_left_out_is_a_local_error_naming_it() {
    for compressor in EVERY_CODEC {
        let encoded = sample_msg().to_bytes(Some(&compressor), MAX);
        if compressor.is_built() {
            let bytes = encoded.expect("a built codec compresses");
            assert_eq!(decode(&bytes).expect("decodes").body, sample_msg().body);
        } else {
            let error = encoded.expect_err("a codec left out cannot compress");
            assert!(
                matches!(error, WireError::CodecNotBuilt(name) if name == compressor.name()),
                "{error:?}"
            );
            assert!(
                !error.is_protocol(),
                "it is this program's limit, not the peer's"
            );
        }
    }
}

#[test]
fn a_peer_compressing_with_a_codec_left_out_gets_a_protocol_error() {
    let original = msg_payload(0, &[&body_section(&ping())]);
    for compressor in EVERY_CODEC.iter().filter(|c| !c.is_built()) {
        let mut after_header = 2013_i32.to_le_bytes().to_vec();
        after_header.extend_from_slice(&i32::try_from(original.len()).expect("fits").to_le_bytes());
        after_header.push(compressor.id().as_u8());
        after_header.extend_from_slice(&original);
        let error = decode(&frame(11, 12, 2012, &after_header)).expect_err("not decodable");
        assert!(matches!(error, WireError::Decompression(_)), "{error:?}");
        assert!(error.is_protocol());
    }
}
