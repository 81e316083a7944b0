use super::*;

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const OTHER_KEY: &[u8] = b"another key, long enough to be one";

#[test]
fn a_sealed_value_opens_under_its_own_name_and_key_only() {
    let sealed = seal(KEY, "a", 7, 1000, b"{\"tools\":[]}");
    assert_eq!(
        open(KEY, "a", &sealed),
        Some((7, b"{\"tools\":[]}".to_vec()))
    );
    assert_eq!(open(KEY, "b", &sealed), None, "moved to another entry");
    assert_eq!(open(OTHER_KEY, "a", &sealed), None);
    let mut forged = sealed.clone();
    *forged.last_mut().unwrap() = b'!';
    assert_eq!(open(KEY, "a", &forged), None, "payload changed");
    let restamped = [b"8".as_slice(), &sealed[1..]].concat();
    assert_eq!(open(KEY, "a", &restamped), None, "stamp changed");
    assert_eq!(open(KEY, "a", b"garbage"), None);
}

#[test]
fn an_unsealed_lease_reads_its_time_and_a_sealed_one_does_not() {
    assert_eq!(
        unsealed_lease(b"12:1700000000000:"),
        Some(1_700_000_000_000)
    );
    assert_eq!(unsealed_lease(&seal(KEY, "lease", 12, 5, b"")), None);
}

#[tokio::test]
async fn a_short_key_and_a_bad_url_are_refused_without_repeating_the_url() {
    assert!(matches!(
        Fleet::connect("redis://127.0.0.1:1", b"short", "r1"),
        Err(FleetError::ShortKey(5))
    ));
    let error = Fleet::connect("nonsense://user:hunter2@host", KEY, "r1").unwrap_err();
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[tokio::test]
async fn slots_are_named_by_the_fleet_key_and_never_by_the_digest() {
    let fleet = Fleet::connect("redis://127.0.0.1:1", KEY, "r1").unwrap();
    let other = Fleet::connect("redis://127.0.0.1:1", OTHER_KEY, "r2").unwrap();
    let digest = [7u8; 32];
    let slot = fleet.slot(&digest, &digest);
    assert_eq!(slot.id, fleet.slot(&digest, &[1; 32]).id);
    assert_ne!(slot.id, other.slot(&digest, &digest).id);
    assert!(!slot.listing.contains(&hex(&digest)));
    assert!(
        slot.listing.contains(&format!("{{{}}}", slot.id)),
        "one hash slot per key"
    );
}
