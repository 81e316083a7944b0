//! Merged lists served a page at a time, in a stable order.
//!
//! Every list the gateway serves (tools, resources, templates, prompts) is ordered by a
//! key of its own ([`page`]): the qualified name for tools, the server's name then the
//! URI or name for the rest. A cursor is the key of the last item of its page, so the
//! next page starts after it, whatever joined or left the list in between.
//!
//! Invariants:
//! 1. Pages hold at most [`PAGE`] items, in key order; each item of a list that does
//!    not change between two pages is on exactly one of them.
//! 2. Only a page followed by more items has a cursor.

/// The most items a page holds.
pub(crate) const PAGE: usize = 500;

/// The page of `items` after `cursor`, ordered by `key`, and the cursor of the next
/// page if more items follow.
pub(crate) fn page<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    key: impl Fn(&T) -> String,
) -> (Vec<T>, Option<String>) {
    let mut keyed: Vec<(String, T)> = items.into_iter().map(|item| (key(&item), item)).collect();
    keyed.sort_by(|(a, _), (b, _)| a.cmp(b));
    let start = cursor.map_or(0, |cursor| {
        keyed.partition_point(|(key, _)| key.as_str() <= cursor)
    });
    let mut rest = keyed.into_iter().skip(start);
    let page: Vec<(String, T)> = rest.by_ref().take(PAGE).collect();
    let next = match rest.next() {
        Some(_) => page.last().map(|(key, _)| key.clone()),
        None => None,
    };
    (page.into_iter().map(|(_, item)| item).collect(), next)
}

/// The key of an item of `server` named (or at) `name`.
pub(crate) fn server_key(server: &str, name: &str) -> String {
    format!("{server}\u{0}{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(count: usize) -> Vec<String> {
        (0..count).map(|index| format!("tool_{index:05}")).collect()
    }

    #[test]
    fn every_item_is_on_exactly_one_page_in_key_order() {
        let mut items = names(1234);
        items.reverse();
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let (page, next) = page(items.clone(), cursor.as_deref(), Clone::clone);
            assert!(page.len() <= PAGE);
            pages += 1;
            seen.extend(page);
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(seen, names(1234));
    }

    #[test]
    fn a_list_that_changes_between_pages_skips_nothing_that_stayed() {
        let items = names(PAGE + 10);
        let (first, cursor) = page(items.clone(), None, Clone::clone);
        let cursor = cursor.expect("more follow");
        // One item of the first page leaves and one joins before the cursor.
        let mut changed: Vec<String> = items.into_iter().skip(1).collect();
        changed.push("tool_00000a".into());
        let (second, next) = page(changed, Some(&cursor), Clone::clone);
        assert_eq!(next, None);
        assert_eq!(first.len(), PAGE);
        assert_eq!(second, names(PAGE + 10)[PAGE..].to_vec());
    }

    #[test]
    fn a_short_list_is_one_page_without_a_cursor() {
        assert_eq!(page(names(3), None, Clone::clone), (names(3), None));
        assert_eq!(page(names(3), Some("zzz"), Clone::clone), (vec![], None));
    }
}
