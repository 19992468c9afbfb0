//! The residue report (SPEC §4) against the A2A protocol's own published
//! JSON Schema (v1.0.1, vendored as `tests/data/a2a/a2a.json`; see the
//! `NOTICE.md` beside it), plus the rules the schema
//! omits but the proto requires.

use std::process::Command;
use std::time::Instant;

use baton::ledger::{Child, Delegation, Delegations};
use baton::residue::a2a::{Content, Part};
use baton::residue::{DetachedWork, Residue, ResidueItem};
use jsonschema::{Retrieve, Uri, Validator};
use serde_json::{Value, json};

/// The vendored schema, compiled in: the test reads no path at run time.
const SCHEMA: &str = include_str!("data/a2a/a2a.json");
/// Its size as published (`tests/data/a2a/NOTICE.md`): an edited copy fails.
const SCHEMA_BYTES: usize = 75_186;
const BASE: &str = "https://a2a.invalid/v1.0.1/";

/// Serves the bundle's definitions as the per-message documents its `$ref`s
/// name: `lf.a2a.v1.<Name>.jsonschema.json` is the definition whose title
/// without spaces is `<Name>`; `google.protobuf.<Name>.jsonschema.json` is
/// the definition `<Name>` (see `tests/data/a2a/NOTICE.md`).
struct Bundle(serde_json::Map<String, Value>);

impl Bundle {
    fn document(&self, file: &str) -> Option<Value> {
        let name = file.strip_suffix(".jsonschema.json")?;
        let wanted = name
            .strip_prefix("lf.a2a.v1.")
            .or_else(|| name.strip_prefix("google.protobuf."))?;
        self.0
            .iter()
            .find(|(title, _)| title.replace(' ', "") == wanted)
            .map(|(_, definition)| definition.clone())
    }
}

impl Retrieve for Bundle {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let file = uri.as_str().rsplit('/').next().unwrap_or_default();
        self.document(file)
            .ok_or_else(|| format!("no definition for {uri}").into())
    }
}

fn artifact_validator() -> Validator {
    assert_eq!(
        SCHEMA.len(),
        SCHEMA_BYTES,
        "tests/data/a2a/a2a.json is not the published v1.0.1 file"
    );
    let bundle: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    let definitions = bundle["definitions"]
        .as_object()
        .expect("definitions")
        .clone();
    let mut root = json!({ "$ref": "lf.a2a.v1.Artifact.jsonschema.json" });
    root["$id"] = format!("{BASE}root.jsonschema.json").into();
    jsonschema::options()
        .with_retriever(Bundle(definitions))
        .build(&root)
        .expect("the A2A schema compiles")
}

/// The proto's rules the schema does not encode.
fn proto_rules(artifact: &Value) -> Result<(), String> {
    let id = artifact
        .get("artifactId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if id.is_empty() {
        return Err("artifactId is required".into());
    }
    let parts = artifact
        .get("parts")
        .and_then(Value::as_array)
        .ok_or("parts is required")?;
    if parts.is_empty() {
        return Err("an artifact has at least one part".into());
    }
    for (n, part) in parts.iter().enumerate() {
        let set = ["text", "raw", "url", "data"]
            .iter()
            .filter(|k| part.get(**k).is_some())
            .count();
        if set != 1 {
            return Err(format!(
                "parts[{n}] sets {set} of text|raw|url|data, not exactly one"
            ));
        }
    }
    Ok(())
}

fn conforms(validator: &Validator, artifact: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(artifact)
        .map(|e| e.to_string())
        .collect();
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    proto_rules(artifact)
}

fn delegation(capsule: &str) -> Delegation {
    Delegation {
        task_id: "tsk_a".into(),
        capsule: capsule.into(),
        version: "0.1.0".into(),
        child_session_id: format!("ses_{capsule}"),
        child_workdir: format!("/tmp/{capsule}"),
        started: Instant::now(),
    }
}

#[test]
fn the_validator_rejects_what_a2a_rejects_so_its_passes_mean_something() {
    let validator = artifact_validator();
    let good =
        json!({"artifactId": "a", "parts": [{"data": {"x": 1}, "mediaType": "application/json"}]});
    assert_eq!(conforms(&validator, &good), Ok(()));
    let bad = [
        json!({"artifactId": "a", "parts": [{"kind": "data", "data": {}}]}),
        json!({"artifactId": "a", "parts": [{"text": 3}]}),
        json!({"artifactId": "a", "parts": [], "extra": true}),
        json!({"artifactId": 7, "parts": []}),
        json!({"parts": [{"data": 1}]}),
        json!({"artifactId": "a", "parts": []}),
        json!({"artifactId": "a", "parts": [{"text": "t", "data": 1}]}),
        json!({"artifactId": "a", "parts": [{"mediaType": "text/plain"}]}),
    ];
    for artifact in bad {
        assert!(
            conforms(&validator, &artifact).is_err(),
            "accepted {artifact}"
        );
    }
}

#[test]
fn an_empty_residue_produces_no_artifact() {
    assert!(Residue::default().is_empty());
    assert!(Residue::default().into_artifact().is_none());
    assert!(
        Residue::snapshot(Vec::new(), &Delegations::new())
            .into_artifact()
            .is_none()
    );
}

#[test]
fn a_residue_lists_detached_work_then_delegations_each_by_id_as_conforming_data_parts() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    ledger.register("dlg_b", delegation("second")).unwrap();
    ledger.register("dlg_a", delegation("first")).unwrap();
    let detached = [("wrk_z", 17), ("wrk_a", 18)].map(|(id, at)| DetachedWork {
        work_id: id.into(),
        binary: "sleep".into(),
        command: "sleep 30".into(),
        started_at_ms: at,
    });
    let residue = Residue::snapshot(detached, &ledger);
    assert_eq!(residue.detached_work_ids(), ["wrk_a", "wrk_z"]);
    assert_eq!(residue.delegation_ids(), ["dlg_a", "dlg_b"]);
    let ids: Vec<&str> = residue.items().iter().map(ResidueItem::id).collect();
    assert_eq!(ids, ["wrk_a", "wrk_z", "dlg_a", "dlg_b"]);

    let artifact = residue.into_artifact().expect("four items");
    assert_eq!(
        (
            artifact.artifact_id.as_str(),
            artifact.name.as_str(),
            artifact.parts.len()
        ),
        ("residue", "residue", 4)
    );
    let wire = serde_json::to_value(&artifact).unwrap();
    conforms(&artifact_validator(), &wire).unwrap_or_else(|e| panic!("{wire}: {e}"));
    assert_eq!(
        wire["parts"][1],
        json!({"data": {"kind": "detached_shell", "work_id": "wrk_z", "binary": "sleep", "command": "sleep 30", "started_at_ms": 17}, "mediaType": "application/json"})
    );
    assert_eq!(
        wire["parts"][2]["data"],
        json!({"kind": "delegation", "delegation_id": "dlg_a", "capsule": "first", "version": "0.1.0", "child_session_id": "ses_first", "child_workdir": "/tmp/first"})
    );
    let back: baton::residue::a2a::Artifact = serde_json::from_value(wire).unwrap();
    assert_eq!(back, artifact);
}

struct Process(std::sync::Mutex<std::process::Child>);

impl Child for Process {
    fn begin_ending(&self) {
        let mut child = self.0.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
    fn is_being_ended(&self) -> bool {
        false
    }
}

/// A residue taken from real running processes: detached `sleep` shells and
/// delegations with `sleep` children.
#[test]
fn a_residue_of_real_processes_conforms_to_a2a() {
    let ledger = Delegations::new();
    let scope = ledger.scope_task("tsk_a").unwrap();
    let mut shells = Vec::new();
    let mut detached = Vec::new();
    for _ in 0..2 {
        // `exec`: the shell becomes the `sleep`, so killing it leaves no
        // orphan holding the test's stdout open for 30 s.
        let shell = Command::new("sh")
            .args(["-c", "exec sleep 30"])
            .spawn()
            .expect("spawn sh");
        detached.push(DetachedWork {
            work_id: format!("wrk_{}", shell.id()),
            binary: "sh".into(),
            command: "sh -c 'exec sleep 30'".into(),
            started_at_ms: 1_700_000_000_000,
        });
        shells.push(shell);
    }
    for n in 0..2 {
        let id = format!("dlg_{n}");
        ledger
            .register(&id, delegation(&format!("capsule{n}")))
            .unwrap();
        let child = Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        ledger.adopt(&id, Box::new(Process(std::sync::Mutex::new(child))));
    }
    let artifact = Residue::snapshot(detached, &ledger)
        .into_artifact()
        .expect("four running");
    let wire = serde_json::to_value(&artifact).unwrap();
    let result = conforms(&artifact_validator(), &wire);
    drop(scope); // ends the delegations' children
    for mut shell in shells {
        let _ = shell.kill();
        let _ = shell.wait();
    }
    result.unwrap_or_else(|e| panic!("{wire}: {e}"));
    assert_eq!(artifact.parts.len(), 4);
}

/// Each data part hands back exactly its item's JSON; a part of another kind
/// has no data.
#[test]
fn each_data_part_holds_its_items_json_and_other_parts_hold_none() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    ledger.register("dlg_a", delegation("first")).unwrap();
    let residue = Residue::snapshot(Vec::new(), &ledger);
    assert!(!residue.is_empty());
    let expected: Vec<Value> = residue.items().iter().map(ResidueItem::to_json).collect();
    let artifact = residue.into_artifact().expect("one item");
    let data: Vec<Option<&Value>> = artifact.parts.iter().map(Part::as_data).collect();
    assert_eq!(data, expected.iter().map(Some).collect::<Vec<_>>());
    for other in [
        Content::Text("t".into()),
        Content::Raw("cmF3".into()),
        Content::Url("https://a2a.invalid/".into()),
    ] {
        let part = Part {
            content: other,
            media_type: None,
        };
        assert_eq!(part.as_data(), None);
    }
}
