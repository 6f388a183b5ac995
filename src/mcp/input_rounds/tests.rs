//! The pure pieces, then the loop over a peer.

mod pure {
    use crate::mcp::input_rounds::*;

    fn needed(json: &str) -> InputRound<'_> {
        match outcome(RawJson::new(json)).unwrap() {
            Outcome::InputRequired(n) => n,
            o => panic!("{o:?}: {json}"),
        }
    }

    #[test]
    fn no_result_type_and_complete_are_complete() {
        for r in [r#"{"content":[]}"#, r#"{"resultType":"complete","content":[]}"#, "{}"] {
            assert_eq!(outcome(RawJson::new(r)).unwrap(), Outcome::Complete, "{r}");
        }
    }

    #[test]
    fn a_task_is_a_task_and_an_unknown_result_type_is_malformed() {
        let created = r#"{"resultType":"task","taskId":"t1","status":"working"}"#;
        assert_eq!(outcome(RawJson::new(created)).unwrap(), Outcome::Task);
        assert!(outcome(RawJson::new(r#"{"resultType":"tasks"}"#)).is_err());
    }

    #[test]
    fn a_created_task_names_its_id_and_interval() {
        let created = RawJson::new(
            r#"{"resultType":"task","taskId":"t-1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttlMs":null,"pollIntervalMs":250}"#,
        );
        assert_eq!(created_task(created).unwrap(), ("t-1".to_owned(), Some(250)));
        let no_interval = RawJson::new(r#"{"resultType":"task","taskId":"é\"2"}"#);
        assert_eq!(created_task(no_interval).unwrap(), ("é\"2".to_owned(), None));
        for bad in [r#"{"resultType":"task"}"#, r#"{"taskId":7}"#, "[]", "null"] {
            assert!(created_task(RawJson::new(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn input_requests_are_read_in_order_with_their_params_as_written() {
        let n = needed(
            r#"{"resultType":"input_required","inputRequests":{
                "b":{"method":"roots/list"},
                "a":{"method":"elicitation/create","params":{"message":"x", "n":1.50}}}}"#,
        );
        let keys: Vec<&str> = n.requests.iter().map(|r| r.key.as_ref()).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(n.requests[0].params, None);
        assert_eq!(n.requests[1].params.unwrap().get(), r#"{"message":"x", "n":1.50}"#);
        assert_eq!(n.request_state, None);
    }

    #[test]
    fn request_state_is_kept_as_written() {
        let n = needed(r#"{"resultType":"input_required","requestState": "a\"b\u00e9\/" }"#);
        assert!(n.requests.is_empty());
        assert_eq!(n.request_state.unwrap().get(), r#""a\"b\u00e9\/""#);
    }

    #[test]
    fn malformed_results_are_refused() {
        for r in [
            "[]",
            r#"{"resultType":7}"#,
            r#"{"resultType":"later"}"#,
            r#"{"resultType":"input_required"}"#,
            r#"{"resultType":"input_required","requestState":{"s":1}}"#,
            r#"{"resultType":"input_required","inputRequests":[]}"#,
            r#"{"resultType":"input_required","inputRequests":{"a":{"params":{}}}}"#,
            r#"{"resultType":"input_required","inputRequests":{"a":{"method":"x"},"a":{"method":"y"}}}"#,
            r#"{"resultType":"input_required","resultType":"complete"}"#,
        ] {
            assert!(matches!(outcome(RawJson::new(r)), Err(Malformed(_))), "{r}");
        }
    }

    #[test]
    fn retry_params_echo_the_state_verbatim_and_key_responses_as_requested() {
        let state = RawJson::new(r#""{\"nonce\":\"\u00e9\",\"originalId\":3}""#);
        let responses = vec![
            ("confirm".to_owned(), r#"{"action":"accept","content":{"ok":true}}"#.to_owned()),
            ("roots".to_owned(), r#"{"roots":[]}"#.to_owned()),
        ];
        let original = RawJson::new(r#"{"name":"t", "arguments":{"x":1.50}}"#);
        let out = retry_params(Some(original), &responses, Some(state)).unwrap();
        assert_eq!(
            out,
            format!(
                r#"{{"name":"t","arguments":{{"x":1.50}},"inputResponses":{{"confirm":{},"roots":{}}},"requestState":{}}}"#,
                responses[0].1,
                responses[1].1,
                state.get()
            )
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["requestState"], "{\"nonce\":\"é\",\"originalId\":3}");
        assert_eq!(v["inputResponses"]["confirm"]["content"]["ok"], true);
    }

    #[test]
    fn retry_params_replace_old_rounds_and_omit_what_is_absent() {
        let original = RawJson::new(
            r#"{"inputResponses":{"old":{}},"name":"t","requestState":"old","_meta":{"k":1}}"#,
        );
        assert_eq!(
            retry_params(Some(original), &[], None).unwrap(),
            r#"{"name":"t","_meta":{"k":1}}"#
        );
        assert_eq!(retry_params(None, &[], None).unwrap(), "{}");
        assert_eq!(
            retry_params(None, &[], Some(RawJson::new(r#""s""#))).unwrap(),
            r#"{"requestState":"s"}"#
        );
        for bad in ["[]", "7", r#"{"a":1,"a":2}"#] {
            assert!(retry_params(Some(RawJson::new(bad)), &[], None).is_err(), "{bad}");
        }
        let not_json = [("k".to_owned(), "{".to_owned())];
        assert!(retry_params(None, &not_json, None).is_err());
    }

    #[test]
    fn limits_default_to_the_constants_and_are_settable() {
        let l = InputLimits::default();
        assert_eq!((l.max_rounds, l.max_requests), (MAX_INPUT_ROUNDS, DEFAULT_MAX_INPUT_REQUESTS));
        let l = l.max_rounds(2).max_requests(3);
        assert_eq!((l.max_rounds, l.max_requests), (2, 3));
    }

    /// A response frame whose `result` is `result`.
    fn response(result: &str) -> crate::Frame {
        let line = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}}"#);
        crate::FrameParser::new(crate::Limits::default()).parse(line.as_str().into())
    }

    #[test]
    fn the_outcome_of_a_parsed_response_is_the_outcome_of_its_result() {
        for result in [
            r#"{"content":[]}"#,
            r#"{"content":[],"resultType":"complete"}"#,
            r#"{ "resultType" : "complete" , "content" : [ ] }"#,
            r#"{"resultType":"task","task":{"taskId":"t"}}"#,
            r#"{"resultType":null}"#,
            r#"{"resultType":"compl\u0065te"}"#,
            r#"{"resultType":"input_required","requestState":"s","inputRequests":{"a":{"method":"roots/list"}}}"#,
            r#"{"resultType":"other"}"#,
            r#"{"resultType":1}"#,
            r#"{"resultType":"complete","resultType":"task"}"#,
            r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"resultType":"task"}"#,
            "{}",
        ] {
            let f = response(result);
            let msg = f.message().unwrap();
            let read = format!("{:?}", outcome(RawJson::new(result)));
            assert_eq!(format!("{:?}", outcome_of(&msg, msg.result().unwrap())), read, "{result}");
        }
        // The recorded members answer the common results without the scan.
        let f = response(r#"{"content":[{"type":"text","text":"x"}],"resultType":"task"}"#);
        assert!(f.message().unwrap().result_members().is_some());
    }
}
