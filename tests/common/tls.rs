//! Certificates made by the test itself (rcgen): a CA, a server certificate it signs for the
//! names asked, and a client certificate for mutual TLS, written as PEM files in a directory
//! of the test's own.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// A CA and what it signed, as PEM files.
pub struct Pki {
    pub dir: PathBuf,
    /// The CA's certificate (what a client trusts).
    pub ca: PathBuf,
    /// The server's chain (leaf) and key.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A client certificate the CA signed, and its key.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl Pki {
    /// A new CA named `name`, and a server certificate for `names` (DNS names or IP
    /// addresses), written under a fresh directory.
    pub fn new(name: &str, names: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "mcpwire-tls-{name}-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let pki = Self {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
            client_cert: dir.join("client.pem"),
            client_key: dir.join("client.key"),
            dir,
        };
        pki.issue(name, names);
        pki
    }

    /// A new CA and server certificate in place of the old (what a renewal looks like).
    pub fn issue(&self, name: &str, names: &[&str]) {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, format!("{name} test CA"));
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        write(&self.ca, &ca_cert.pem());

        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let leaf = CertificateParams::new(names).unwrap().signed_by(&key, &issuer).unwrap();
        write(&self.cert, &leaf.pem());
        write(&self.key, &key.serialize_pem());

        let client_key = KeyPair::generate().unwrap();
        let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
        client.distinguished_name.push(DnType::CommonName, "a test client");
        let client = client.signed_by(&client_key, &issuer).unwrap();
        write(&self.client_cert, &client.pem());
        write(&self.client_key, &client_key.serialize_pem());
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write(path: &Path, text: &str) {
    // Written aside and renamed, so a reader never sees half a file.
    let aside = path.with_extension("new");
    std::fs::write(&aside, text).unwrap();
    std::fs::rename(aside, path).unwrap();
}

fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
