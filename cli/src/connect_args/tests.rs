use super::*;

fn env(var: &str) -> Option<String> {
    (var == "TOKEN").then(|| "s3cret".to_owned())
}

#[test]
fn a_header_is_name_colon_value_with_variables_from_the_environment() {
    let (n, v) = header("Authorization: Bearer ${TOKEN}", &env).unwrap();
    assert_eq!(n, http::header::AUTHORIZATION);
    assert_eq!(v, "Bearer s3cret");
    let (n, v) = header("x-tenant:blue", &env).unwrap();
    assert_eq!((n.as_str(), v.to_str().unwrap()), ("x-tenant", "blue"));
    // A `$` without braces is the value's own.
    assert_eq!(header("x-price: $5", &env).unwrap().1, "$5");
}

#[test]
fn a_bad_header_is_refused_without_showing_its_value() {
    let e = header("Authorization Bearer abc", &env).unwrap_err();
    assert!(e.contains("expected `Name: value`") && !e.contains("abc"), "{e}");
    let e = header("Authorization: Bearer ${NOPE}", &env).unwrap_err();
    assert!(e.contains("${NOPE} is not set") && e.contains("Authorization: …"), "{e}");
    let e = header("Authorization: Bearer ${TOKEN", &env).unwrap_err();
    assert!(e.contains("unclosed"), "{e}");
    let e = header("bad name: x", &env).unwrap_err();
    assert!(e.contains("not a header name"), "{e}");
    let e = header("x-a: line\nbreak", &env).unwrap_err();
    assert!(e.contains("cannot carry") && !e.contains("break"), "{e}");
}

#[test]
fn headers_come_from_a_file_one_per_line() {
    let path = std::env::temp_dir().join(format!("mcpwire-headers-{}", std::process::id()));
    std::fs::write(&path, "# comment\nx-a: 1\n\nx-b: 2\n").unwrap();
    let got = headers_of(&format!("@{}", path.display())).unwrap();
    let names: Vec<_> = got.iter().map(|(n, v)| format!("{n}={}", v.to_str().unwrap())).collect();
    assert_eq!(names, ["x-a=1", "x-b=2"]);
    let _ = std::fs::remove_file(&path);
    assert!(headers_of("@/no/such/file").unwrap_err().contains("/no/such/file"));
}
