use super::*;

#[test]
fn decoded_raw_borrows_the_exact_text() {
    let text = r##"{"s": {"$ref" : "#/x",  "a":[1, 2]}}"##;
    #[derive(Deserialize)]
    struct Holder<'a> {
        #[serde(borrow)]
        s: Raw<'a>,
    }
    let h: Holder<'_> = serde_json::from_str(text).unwrap();
    assert_eq!(h.s.get(), r##"{"$ref" : "#/x",  "a":[1, 2]}"##);
    let start = h.s.get().as_ptr() as usize - text.as_ptr() as usize;
    assert_eq!(start, 6, "borrowed from the input, not copied");
    assert_eq!(serde_json::to_string(&h.s).unwrap(), r##"{"$ref" : "#/x",  "a":[1, 2]}"##);
}

#[test]
fn invalid_text_is_refused() {
    assert!(Raw::parse("{").is_err());
    assert!(Raw::parse("1 2").is_err());
    assert!(Raw::owned("[".to_owned()).is_err());
}
