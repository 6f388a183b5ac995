use super::*;

fn ca_pem() -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.self_signed(&key).unwrap().pem()
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mcpwire-tls-unit-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn roots_are_named_as_the_cli_takes_them() {
    assert_eq!("webpki".parse(), Ok(Roots::Webpki));
    assert_eq!("platform".parse(), Ok(Roots::Platform));
    assert_eq!("none".parse(), Ok(Roots::None));
    assert!("system".parse::<Roots>().unwrap_err().contains("webpki, platform or none"));
}

#[test]
fn pem_without_a_certificate_is_refused_with_why() {
    let e = ClientTls::builder().add_ca_pem(b"hello\n").unwrap_err();
    assert!(e.to_string().contains("no CERTIFICATE"), "{e}");
    let e = ClientTls::builder().add_ca_pem_file("/no/such/ca.pem").unwrap_err();
    assert!(e.to_string().starts_with("/no/such/ca.pem: "), "{e}");
    let e = ClientTls::builder().identity_pem(ca_pem().as_bytes(), b"no key here").unwrap_err();
    assert!(e.to_string().contains("no private key"), "{e}");
}

#[test]
fn no_root_at_all_is_refused_and_an_added_ca_is_enough() {
    let e = ClientTls::builder().roots(Roots::None).build().unwrap_err();
    assert!(e.to_string().contains("no root certificate"), "{e}");
    let tls = ClientTls::builder()
        .roots(Roots::None)
        .add_ca_pem(ca_pem().as_bytes())
        .unwrap()
        .build()
        .unwrap();
    assert!(!tls.skips_verification());
    // Skipping verification needs no root.
    let skip = ClientTls::builder().roots(Roots::None).danger_skip_verification(true).build();
    assert!(skip.unwrap().skips_verification());
}

#[test]
fn a_key_that_does_not_match_the_certificate_is_refused() {
    let d = dir("mismatch");
    let key = rcgen::KeyPair::generate().unwrap();
    let other = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    std::fs::write(d.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(d.join("key.pem"), key.serialize_pem()).unwrap();
    std::fs::write(d.join("other.pem"), other.serialize_pem()).unwrap();
    let tls = ServerTls::from_pem_files(d.join("cert.pem"), d.join("key.pem")).unwrap();
    assert_eq!(tls.rustls_config().alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    let e = ServerTls::from_pem_files(d.join("cert.pem"), d.join("other.pem")).unwrap_err();
    assert!(e.to_string().contains("does not match the certificate"), "{e}");
    // A reload that finds a mismatched pair keeps what it had.
    std::fs::copy(d.join("other.pem"), d.join("key.pem")).unwrap();
    assert!(tls.reload().is_err());
    let _ = std::fs::remove_dir_all(d);
}
