//! Facts: validation names the field at fault; decoding never panics.

use super::*;

fn source() -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: "run".into(),
        invocation_id: "invocation".into(),
    }
}

fn intent() -> HandoffIntent {
    HandoffIntent {
        handoff_id: "handoff".into(),
        host_epoch: "epoch".into(),
        root_run_id: "run".into(),
        successor_run_id: "successor-run".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    }
}

fn with(field: Field, value: &str) -> HandoffIntent {
    let mut intent = intent();
    let slot = match field {
        Field::HandoffId => &mut intent.handoff_id,
        Field::HostEpoch => &mut intent.host_epoch,
        Field::RootRunId => &mut intent.root_run_id,
        Field::SuccessorRunId => &mut intent.successor_run_id,
        Field::SuccessorInvocationId => &mut intent.successor_invocation_id,
        Field::ClaimId => &mut intent.claim_id,
    };
    *slot = value.into();
    intent
}

const FIELDS: [Field; 6] = [
    Field::HandoffId,
    Field::HostEpoch,
    Field::RootRunId,
    Field::SuccessorRunId,
    Field::SuccessorInvocationId,
    Field::ClaimId,
];

#[test]
fn a_well_formed_intent_validates() {
    assert_eq!(intent().validate(&source()), Ok(()));
    assert_eq!(intent().validate_for(&source(), "run"), Ok(()));
}

#[test]
fn an_empty_id_is_refused_naming_its_field() {
    for field in FIELDS {
        assert_eq!(
            with(field, "").validate(&source()),
            Err(IntentError::Empty(field))
        );
    }
}

#[test]
fn an_id_of_the_limit_passes_and_one_byte_more_is_refused_naming_its_field() {
    for field in FIELDS {
        let at_limit = "x".repeat(MAX_ID_BYTES);
        assert_eq!(
            with(field, &at_limit).validate(&source()),
            Ok(()),
            "{field}"
        );
        let over = "x".repeat(MAX_ID_BYTES + 1);
        assert_eq!(
            with(field, &over).validate(&source()),
            Err(IntentError::TooLong {
                field,
                len: MAX_ID_BYTES + 1
            })
        );
    }
}

#[test]
fn the_limit_counts_bytes_not_characters() {
    // 129 two-byte characters: 258 bytes.
    let wide = "é".repeat(129);
    assert_eq!(
        with(Field::ClaimId, &wide).validate(&source()),
        Err(IntentError::TooLong {
            field: Field::ClaimId,
            len: 258
        })
    );
}

#[test]
fn a_control_character_is_refused_naming_its_field() {
    for field in FIELDS {
        for bad in ["a\nb", "\0", "tab\there", "del\u{7f}", "c1\u{85}"] {
            assert_eq!(
                with(field, bad).validate(&source()),
                Err(IntentError::ControlCharacter(field)),
                "{field} = {bad:?}"
            );
        }
    }
}

proptest::proptest! {
    /// End to end through `check_id` (lengths included); the word check and
    /// the byte scan are each checked exactly in `facts::control_characters`.
    #[test]
    fn any_id_is_refused_for_a_control_character_iff_it_has_one(id in "\\PC{0,3}[\\x00-\\x{a0}]?\\PC{0,40}") {
        proptest::prop_assert_eq!(
            check_id(&id) == Err(IdError::ControlCharacter),
            !id.is_empty() && id.len() <= MAX_ID_BYTES && id.chars().any(char::is_control)
        );
    }
}

#[test]
fn a_successor_equal_to_the_source_is_refused() {
    assert_eq!(
        with(Field::SuccessorRunId, "run").validate(&source()),
        Err(IntentError::SuccessorIsSource(Field::SuccessorRunId))
    );
    assert_eq!(
        with(Field::SuccessorInvocationId, "invocation").validate(&source()),
        Err(IntentError::SuccessorIsSource(Field::SuccessorInvocationId))
    );
}

#[test]
fn another_root_run_is_refused_by_validate_for_only() {
    let other = with(Field::RootRunId, "other-run");
    assert_eq!(other.validate(&source()), Ok(()));
    assert_eq!(
        other.validate_for(&source(), "run"),
        Err(IntentError::OtherRootRun {
            expected: "run".into(),
            found: "other-run".into()
        })
    );
}

#[test]
fn errors_print_the_wire_name_of_the_field() {
    let error = with(Field::SuccessorInvocationId, "")
        .validate(&source())
        .unwrap_err();
    assert_eq!(error.to_string(), "successor_invocation_id is empty");
    let error = with(Field::HostEpoch, &"x".repeat(300))
        .validate(&source())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "host_epoch is 300 bytes, over the 256-byte limit"
    );
}

/// A `Field` is named as its member on the wire, in declaration order,
/// and prints that name.
#[test]
fn every_field_is_named_as_its_member_on_the_wire() {
    let json = serde_json::to_string(&intent()).unwrap();
    let members: Vec<String> = serde_json::from_str::<serde_json::Map<_, _>>(&json)
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut names: Vec<&str> = FIELDS.iter().map(|field| field.as_str()).collect();
    names.sort_unstable();
    assert_eq!(members, names);
    for field in FIELDS {
        assert_eq!(field.to_string(), field.as_str());
        assert!(json.contains(&format!("\"{field}\":")), "{field} in {json}");
    }
}

#[test]
fn malformed_json_is_an_error_naming_the_field_never_a_panic() {
    let full = r#"{"handoff_id":"h","host_epoch":"e","root_run_id":"r","successor_run_id":"s","successor_invocation_id":"i","claim_id":"c""#;
    let cases = [
        ("".to_string(), ".", "EOF"),
        ("true".into(), ".", "invalid type"),
        (
            r#"{"handoff_id": 3}"#.into(),
            "handoff_id",
            "invalid type: integer",
        ),
        (
            r#"{"handoff_id": "h"}"#.into(),
            ".",
            "missing field `host_epoch`",
        ),
        (
            format!(r#"{full},"extra":1}}"#),
            "extra",
            "unknown field `extra`",
        ),
        (format!(r#"{full}}} trailing"#), ".", "trailing characters"),
        (
            r#"{"handoff_id": "\ud800"}"#.into(),
            "handoff_id",
            "hex escape",
        ),
    ];
    for (json, path, expected) in cases {
        let error = from_json::<HandoffIntent>(json.as_bytes()).unwrap_err();
        assert_eq!(error.path(), path, "{json}: {error}");
        assert!(error.to_string().contains(expected), "{json}: {error}");
    }
    assert!(from_json::<HandoffIntent>(format!("{full}}}").as_bytes()).is_ok());
    assert!(from_json::<Invocation>(br#"{"run_id": null}"#).is_err());
    assert!(from_json::<HandoffPause<HandoffExecution>>(b"\xff\xfe").is_err());
}

fn digest(c: char) -> Digest {
    Digest::parse(format!("sha256:{}", c.to_string().repeat(64))).expect("valid digest")
}

fn execution() -> HandoffExecution {
    HandoffExecution {
        replay: ReplayEvidence {
            version: REPLAY_VERSION,
            digest: digest('a'),
            route_identity: digest('b'),
        },
        tools: HandoffTools {
            catalog_digest: digest('c'),
            loaded: vec!["shell".into()],
        },
        compaction: CompactionBudget::Available,
        main_output_limit: Some(4096),
        supports_vision: false,
        replay_base: None,
    }
}

#[test]
fn a_digest_is_sha256_and_64_lowercase_hex_digits() {
    let hex = "0123456789abcdef".repeat(4);
    assert_eq!(
        Digest::parse(format!("sha256:{hex}")).map(|d| d.to_string()),
        Ok(format!("sha256:{hex}"))
    );
    let digest = Digest::parse(format!("sha256:{hex}")).unwrap();
    assert_eq!(digest.as_str(), format!("sha256:{hex}"));
    assert_eq!(String::from(digest), format!("sha256:{hex}"));
    assert_eq!(
        Digest::parse(format!("sha512:{hex}")),
        Err(DigestError::MissingPrefix)
    );
    assert_eq!(Digest::parse(hex.clone()), Err(DigestError::MissingPrefix));
    assert_eq!(
        Digest::parse(format!("sha256:{}", &hex[1..])),
        Err(DigestError::Length(63))
    );
    assert_eq!(
        Digest::parse(format!("sha256:{hex}0")),
        Err(DigestError::Length(65))
    );
    assert_eq!(
        Digest::parse(format!("sha256:{}", hex.to_uppercase())),
        Err(DigestError::NotLowercaseHex)
    );
    assert_eq!(
        Digest::parse(format!("sha256:{}g", &hex[1..])),
        Err(DigestError::NotLowercaseHex)
    );
    // 64 bytes but not 64 ASCII digits.
    assert_eq!(
        Digest::parse(format!("sha256:{}é", &hex[2..])),
        Err(DigestError::NotLowercaseHex)
    );
}

#[test]
fn a_bad_digest_in_json_fails_decoding_naming_its_path() {
    let mut json = serde_json::to_value(execution()).unwrap();
    json["replay"]["digest"] = "sha256:ABC".into();
    let bytes = serde_json::to_vec(&json).unwrap();
    let error = from_json::<HandoffExecution>(&bytes).unwrap_err();
    assert_eq!(error.path(), "replay.digest");
    assert!(error.to_string().contains("hex digits"), "{error}");
}

#[test]
fn an_execution_validates_its_version_and_tool_names() {
    assert_eq!(execution().validate(), Ok(()));
    let mut old = execution();
    old.replay.version = 0;
    assert_eq!(old.validate(), Err(ExecutionError::ReplayVersion(0)));
    let mut tools = execution();
    tools.tools.loaded = vec!["ok".into(), String::new()];
    assert_eq!(tools.validate(), Err(ExecutionError::ToolName(1)));
    tools.tools.loaded = vec!["bell\u{7}".into()];
    assert_eq!(tools.validate(), Err(ExecutionError::ToolName(0)));
}

#[test]
fn a_pause_round_trips_through_json_unchanged() {
    let pause = HandoffPause::new(intent(), execution());
    let json = serde_json::to_string(&pause).unwrap();
    let back: HandoffPause<HandoffExecution> = from_json(json.as_bytes()).unwrap();
    assert_eq!(back, pause);
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
    let compaction = serde_json::to_value(CompactionBudget::Exhausted).unwrap();
    assert_eq!(compaction, "exhausted");
}

/// Each fact of a pause as the array of its fields by position (what
/// serde's derive would accept for a struct), in declaration order.
fn positional_intent() -> serde_json::Value {
    let i = intent();
    serde_json::json!([
        i.handoff_id,
        i.host_epoch,
        i.root_run_id,
        i.successor_run_id,
        i.successor_invocation_id,
        i.claim_id
    ])
}

fn positional_replay() -> serde_json::Value {
    let r = execution().replay;
    serde_json::json!([r.version, r.digest, r.route_identity])
}

fn positional_tools() -> serde_json::Value {
    let t = execution().tools;
    serde_json::json!([t.catalog_digest, t.loaded])
}

fn positional_execution() -> serde_json::Value {
    let e = execution();
    serde_json::json!([
        e.replay,
        e.tools,
        e.compaction,
        e.main_output_limit,
        e.supports_vision,
        e.replay_base
    ])
}

/// `error` is the refusal of an array where the object `name` belongs, at
/// `path`.
fn assert_names_the_object(error: &DecodeError, path: &str, name: &str) {
    assert_eq!(error.path(), path, "{error}");
    let message = error.to_string();
    assert!(
        message.contains("invalid type: sequence")
            && message.contains(&format!("expected {name} as a JSON object")),
        "{message}"
    );
}

/// SPEC §1: a fact decodes only from a JSON object. The array of its
/// fields by position, which serde's derive accepts for a struct, is a
/// typed error naming the expected object, for every fact type.
#[test]
fn an_array_where_an_object_belongs_is_a_typed_error_naming_the_object() {
    let error = from_json::<HandoffIntent>(br#"["h","e","run","run-2","inv-2","c"]"#).unwrap_err();
    assert_names_the_object(&error, ".", "HandoffIntent");
    let bytes = serde_json::to_vec(&positional_intent()).unwrap();
    let error = from_json::<HandoffIntent>(&bytes).unwrap_err();
    assert_names_the_object(&error, ".", "HandoffIntent");
    let error = from_json::<HandoffIntent>(b"[]").unwrap_err();
    assert_names_the_object(&error, ".", "HandoffIntent");

    let error = from_json::<Invocation>(br#"["session","turn","run","invocation"]"#).unwrap_err();
    assert_names_the_object(&error, ".", "Invocation");

    let bytes = serde_json::to_vec(&positional_replay()).unwrap();
    let error = from_json::<ReplayEvidence>(&bytes).unwrap_err();
    assert_names_the_object(&error, ".", "ReplayEvidence");
    let bytes = serde_json::to_vec(&positional_tools()).unwrap();
    let error = from_json::<HandoffTools>(&bytes).unwrap_err();
    assert_names_the_object(&error, ".", "HandoffTools");
    let bytes = serde_json::to_vec(&positional_execution()).unwrap();
    let error = from_json::<HandoffExecution>(&bytes).unwrap_err();
    assert_names_the_object(&error, ".", "HandoffExecution");

    let pause = serde_json::json!([intent(), execution()]).to_string();
    let error = from_json::<HandoffPause<HandoffExecution>>(pause.as_bytes()).unwrap_err();
    assert_names_the_object(&error, ".", "HandoffPause");
    // Whatever the payload type: the pause itself is refused.
    let pause = serde_json::json!([intent(), 7]).to_string();
    let error = from_json::<HandoffPause<u32>>(pause.as_bytes()).unwrap_err();
    assert_names_the_object(&error, ".", "HandoffPause");
}

/// SPEC §1: a nested fact decodes only from a JSON object too; the error
/// names the nested object and its path.
#[test]
fn an_array_where_a_nested_object_belongs_is_a_typed_error_at_its_path() {
    let pause = serde_json::to_value(HandoffPause::new(intent(), execution())).unwrap();
    let cases = [
        ("/intent", positional_intent(), "intent", "HandoffIntent"),
        (
            "/execution",
            positional_execution(),
            "execution",
            "HandoffExecution",
        ),
        (
            "/execution/replay",
            positional_replay(),
            "execution.replay",
            "ReplayEvidence",
        ),
        (
            "/execution/tools",
            positional_tools(),
            "execution.tools",
            "HandoffTools",
        ),
    ];
    for (pointer, array, path, name) in cases {
        let mut json = pause.clone();
        *json.pointer_mut(pointer).expect("the member exists") = array;
        let bytes = serde_json::to_vec(&json).unwrap();
        let error = from_json::<HandoffPause<HandoffExecution>>(&bytes).unwrap_err();
        assert_names_the_object(&error, path, name);
    }
    // The same facts as objects decode: only the shape was at fault.
    let bytes = serde_json::to_vec(&pause).unwrap();
    assert!(from_json::<HandoffPause<HandoffExecution>>(&bytes).is_ok());
    // A payload that is an array of its own stays the runtime's business.
    let with_list = serde_json::json!({ "intent": intent(), "execution": [1, 2] });
    let bytes = serde_json::to_vec(&with_list).unwrap();
    let pause: HandoffPause<Vec<u32>> = from_json(&bytes).unwrap();
    assert_eq!(pause.execution, [1, 2]);
}

/// A scalar where an object belongs names the object as well.
#[test]
fn a_scalar_where_an_object_belongs_names_the_object() {
    let error = from_json::<HandoffIntent>(b"true").unwrap_err();
    assert_eq!(error.path(), ".");
    assert!(
        error
            .to_string()
            .contains("invalid type: boolean `true`, expected HandoffIntent as a JSON object"),
        "{error}"
    );
}
