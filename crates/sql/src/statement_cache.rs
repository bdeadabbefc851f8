//! The prepared statements of a wire connection (tsload-sink-mysql's and
//! tsload-sink-postgres's `lean.rs`) by their text, found by the text's address first.
//!
//! A query source hands out the same shared text ([`tsload_core::Statement::text`]) for
//! every request of a kind, so comparing addresses finds a statement without hashing its
//! text: at tens of thousands of point selects a second, hashing was about 2% of the
//! client's user CPU. Texts with an address not seen yet are looked up by their content.

use std::collections::HashMap;
use std::sync::Arc;

/// The addresses remembered; past this the list starts again (a source that makes a new
/// text per request, as the TSBS ones do, only ever misses it).
const RECENT: usize = 32;

/// Prepared statements (`V`: the server's id or name) by text.
#[derive(Debug)]
pub struct StatementCache<V> {
    by_text: HashMap<Arc<str>, V>,
    /// Texts looked up before, by address; each holds its text, so no other text can
    /// take its address while it is here.
    recent: Vec<(Arc<str>, V)>,
}

impl<V> Default for StatementCache<V> {
    fn default() -> Self {
        StatementCache {
            by_text: HashMap::new(),
            recent: Vec::with_capacity(RECENT),
        }
    }
}

impl<V: Clone> StatementCache<V> {
    /// The statement prepared for `text`, if any.
    pub fn get(&mut self, text: &Arc<str>) -> Option<&V> {
        if let Some(i) = self.recent.iter().position(|(t, _)| Arc::ptr_eq(t, text)) {
            return Some(&self.recent[i].1);
        }
        let v = self.by_text.get(text)?.clone();
        if self.recent.len() == RECENT {
            self.recent.clear();
        }
        self.recent.push((text.clone(), v));
        self.recent.last().map(|(_, v)| v)
    }

    pub fn insert(&mut self, text: Arc<str>, v: V) {
        self.forget(&text);
        self.by_text.insert(text, v);
    }

    /// Forgets the statement prepared for `text` (one the server may not hold).
    pub fn remove(&mut self, text: &Arc<str>) {
        self.forget(text);
        self.by_text.remove(text);
    }

    fn forget(&mut self, text: &str) {
        self.recent.retain(|(t, _)| &**t != text);
    }

    pub fn len(&self) -> usize {
        self.by_text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_text.is_empty()
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.by_text.values()
    }

    pub fn clear(&mut self) {
        self.by_text.clear();
        self.recent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_text_by_content_and_by_address_and_forgets_both() {
        let mut cache = StatementCache::default();
        let a: Arc<str> = Arc::from("SELECT 1");
        cache.insert(a.clone(), 7u32);
        // The same address, then another copy of the same text.
        assert_eq!(cache.get(&a), Some(&7));
        assert_eq!(cache.get(&a), Some(&7));
        let copy: Arc<str> = Arc::from("SELECT 1");
        assert_eq!(cache.get(&copy), Some(&7));
        assert_eq!(cache.get(&Arc::from("SELECT 2")), None);
        // A new statement for the text replaces the one found by address.
        cache.insert(copy.clone(), 8);
        assert_eq!(cache.get(&a), Some(&8));
        cache.remove(&a);
        assert_eq!(cache.get(&a), None);
        assert_eq!(cache.get(&copy), None);
        assert!(cache.is_empty());
    }

    #[test]
    fn stays_bounded_when_every_request_brings_a_new_text() {
        let mut cache = StatementCache::default();
        let mut texts = Vec::new();
        for i in 0..100u32 {
            let t: Arc<str> = Arc::from(format!("SELECT {i}"));
            cache.insert(t.clone(), i);
            texts.push(t);
        }
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(cache.get(t), Some(&(i as u32)));
            let other: Arc<str> = Arc::from(&**t);
            assert_eq!(cache.get(&other), Some(&(i as u32)));
        }
        assert!(cache.recent.len() <= RECENT);
        assert_eq!(cache.len(), 100);
        assert_eq!(cache.values().count(), 100);
        cache.clear();
        assert_eq!(cache.get(&texts[0]), None);
    }
}
