use super::*;

fn meta(iss_supported: bool) -> ServerMetadata {
    ServerMetadata {
        authorization_response_iss_parameter_supported: iss_supported,
        ..default_endpoints("https://as.example")
    }
}

#[test]
fn the_s256_challenge_is_base64url_of_sha256() {
    // Computed apart: python3 -c "import hashlib,base64; print(base64.urlsafe_b64encode(
    // hashlib.sha256(b'dBjftJeZ4CVP-mJ92K9h2kj8WfA7fTzDpEnHVqXw1M').digest()).rstrip(b'='))"
    assert_eq!(
        s256("dBjftJeZ4CVP-mJ92K9h2kj8WfA7fTzDpEnHVqXw1M"),
        "mFY0KXyIXGgqcv8jpJ-A2owl_GKPXucjsyC8WSR5Agw"
    );
    assert_eq!(random_token(32).len(), 43);
    assert_ne!(random_token(16), random_token(16));
}

#[test]
fn scopes_are_united_and_offline_access_asked_only_where_offered() {
    assert_eq!(union(Some("a b"), Some("b c")).as_deref(), Some("a b c"));
    assert_eq!(union(None, None), None);
    let mut m = meta(false);
    assert_eq!(with_offline_access(Some("read".into()), &m).as_deref(), Some("read"));
    m.scopes_supported = Some(vec!["read".into(), "offline_access".into()]);
    assert_eq!(
        with_offline_access(Some("read".into()), &m).as_deref(),
        Some("read offline_access")
    );
    assert_eq!(with_offline_access(None, &m), None);
}

#[test]
fn the_token_endpoint_method_follows_the_secret_and_the_server() {
    assert_eq!(auth_method(false, None), "none");
    assert_eq!(auth_method(true, None), "client_secret_basic");
    let post = ["client_secret_post".to_owned()];
    assert_eq!(auth_method(true, Some(&post)), "client_secret_post");
}

#[test]
fn a_redirect_is_checked_for_state_and_issuer() {
    let at = |q: &str| Url::parse(&format!("http://localhost:3000/callback?{q}")).unwrap();
    assert_eq!(code_of(&at("code=c1&state=s"), "s", &meta(false)).unwrap(), "c1");
    assert!(code_of(&at("code=c1&state=x"), "s", &meta(false)).is_err());
    // The server promises `iss`: it must come, and be the issuer.
    assert!(code_of(&at("code=c1&state=s"), "s", &meta(true)).is_err());
    let ok = code_of(&at("code=c1&state=s&iss=https%3A%2F%2Fas.example"), "s", &meta(true));
    assert_eq!(ok.unwrap(), "c1");
    let wrong = code_of(&at("code=c1&state=s&iss=https%3A%2F%2Fevil.example"), "s", &meta(false));
    assert!(matches!(wrong, Err(AuthError::IssuerMismatch { .. })));
    let denied = code_of(&at("error=access_denied&state=s"), "s", &meta(false)).unwrap_err();
    assert!(denied.to_string().contains("access_denied"), "{denied}");
}
