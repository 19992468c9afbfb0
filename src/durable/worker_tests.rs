//! The worker's last step: its errors.

use std::error::Error as _;

use super::*;

/// The error chain names each cause once: `SealError::Append`'s message
/// does not repeat the `LogError` its `source()` returns, nor
/// `LogError::Storage`'s the store's error.
#[test]
fn a_failed_appends_error_chain_prints_each_cause_once() {
    let error = SealError::Append(LogError::Storage("disk full".into()));
    let mut chain = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(next) = cause {
        chain.push(next.to_string());
        cause = next.source();
    }
    assert_eq!(
        chain,
        [
            "the durable append failed; the gate is closed without a seal",
            "storage failed",
            "disk full",
        ]
    );
    let encode = LogError::Encode(serde_json::from_str::<u32>("x").unwrap_err());
    let inner = encode
        .source()
        .expect("the JSON error is the source")
        .to_string();
    assert!(!encode.to_string().contains(&inner), "{encode}");
}
