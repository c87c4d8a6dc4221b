//! Throwaway certificates for TLS tests: a CA, server certificates, and client certificates
//! with a chosen subject, as PEM text and as files in a temporary folder removed on drop.
//! Every test that needs a certificate uses this one generator (driver and blackpipe tests).
//!
//! Test code: generation failures panic with the reason.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// The attribute types of a subject, for [`TestPki::client`].
pub use rcgen::DnType;

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A test CA and the folder its files are written to.
pub struct TestPki {
    dir: PathBuf,
    ca: CertifiedIssuer<'static, KeyPair>,
    ca_file: PathBuf,
}

/// A certificate and its private key, signed by a [`TestPki`].
pub struct Identity {
    /// The certificate, then the key, in one PEM text (mongod's and the driver's
    /// `tlsCertificateKeyFile` format).
    pub pem: String,
    /// `pem`, written to a file.
    pub file: PathBuf,
    /// The certificate alone, DER encoded.
    pub der: Vec<u8>,
}

impl Drop for TestPki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl TestPki {
    /// A fresh CA ("steadfast test CA") in a fresh temporary folder.
    pub fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "steadfast-pki-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create the certificate folder");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "steadfast test CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        let ca = CertifiedIssuer::self_signed(params, key).expect("self-signed CA");
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, ca.pem()).expect("write the CA file");
        Self { dir, ca, ca_file }
    }

    /// The CA certificate as PEM text.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// The CA certificate's file (`tlsCAFile`).
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// A server certificate whose only subject alternative name is `san` (a DNS name or an
    /// IP literal).
    pub fn server(&self, san: &str) -> Identity {
        self.server_for(&[san])
    }

    /// A server certificate valid for each of `sans` (DNS names or IP literals), as a
    /// deployment reached under several names needs.
    pub fn server_for(&self, sans: &[&str]) -> Identity {
        let names = sans.iter().map(|san| (*san).to_owned()).collect::<Vec<_>>();
        let params = CertificateParams::new(names).expect("server parameters");
        self.sign(params, ExtendedKeyUsagePurpose::ServerAuth, "server")
    }

    /// A client certificate whose subject has these attributes, in this order (the first is
    /// encoded first, so it comes last in the RFC 2253 form).
    pub fn client(&self, subject: &[(DnType, &str)]) -> Identity {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client parameters");
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in subject {
            params.distinguished_name.push(kind.clone(), *value);
        }
        self.sign(params, ExtendedKeyUsagePurpose::ClientAuth, "client")
    }

    fn sign(
        &self,
        mut params: CertificateParams,
        usage: ExtendedKeyUsagePurpose,
        role: &str,
    ) -> Identity {
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().expect("key");
        let certificate = params
            .signed_by(&key, &self.ca)
            .expect("signed certificate");
        let pem = format!("{}{}", certificate.pem(), key.serialize_pem());
        let file = self.dir.join(format!(
            "{role}-{}.pem",
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&file, &pem).expect("write the identity file");
        Identity {
            pem,
            file,
            der: certificate.der().to_vec(),
        }
    }
}

impl Default for TestPki {
    fn default() -> Self {
        Self::new()
    }
}
