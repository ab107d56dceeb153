//! Per-file word sets that ranking derives on first use (the words of the names a file
//! defines, the words of its opening documentation), kept compact and within a budget.
//!
//! A long-lived server meets more and more files as questions vary. Holding each file's
//! words as a `Vec<String>` cost about 50 bytes of heap per word, and on a 291k-chunk index
//! 516 different questions grew the server by 250 MB. A set here is one string buffer and
//! one end offset per word; once the cache holds [`BUDGET`] bytes, further sets are derived
//! for the search that asks and then dropped.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of word sets a cache keeps at most, all files together.
const BUDGET: usize = 24 << 20;

/// A sorted, deduplicated set of words.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Words {
    text: String,
    ends: Vec<u32>,
}

impl Words {
    /// The set of `words` (in any order, repeats allowed).
    pub(super) fn new(mut words: Vec<String>) -> Words {
        words.sort_unstable();
        words.dedup();
        let mut text = String::with_capacity(words.iter().map(String::len).sum());
        let mut ends = Vec::with_capacity(words.len());
        for w in &words {
            text.push_str(w);
            ends.push(text.len() as u32);
        }
        Words { text, ends }
    }

    /// The words, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &str> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(s, e)| &self.text[s as usize..e as usize])
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Heap bytes held.
    fn bytes(&self) -> usize {
        self.text.capacity() + 4 * self.ends.capacity()
    }
}

/// One word set per file, derived on first use and kept while the cache is within its budget.
pub(super) struct WordCache {
    cells: Vec<OnceLock<Words>>,
    held: AtomicUsize,
}

impl WordCache {
    pub(super) fn new(files: usize) -> WordCache {
        WordCache {
            cells: (0..files).map(|_| OnceLock::new()).collect(),
            held: AtomicUsize::new(0),
        }
    }

    /// The set of `file`: the kept one, or `derive`'s, kept if the budget allows. A file
    /// beyond the cache's files has the empty set.
    pub(super) fn get<E>(
        &self,
        file: u32,
        derive: impl FnOnce() -> Result<Words, E>,
    ) -> Result<Cow<'_, Words>, E> {
        let Some(cell) = self.cells.get(file as usize) else {
            return Ok(Cow::Owned(Words::default()));
        };
        if let Some(words) = cell.get() {
            return Ok(Cow::Borrowed(words));
        }
        let words = derive()?;
        let bytes = words.bytes();
        let kept = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (held + bytes <= BUDGET).then_some(held + bytes)
            })
            .is_ok();
        if !kept {
            return Ok(Cow::Owned(words));
        }
        let mut words = Some(words);
        let kept = cell.get_or_init(|| words.take().unwrap_or_default());
        if words.is_some() {
            // Another search kept this file's set first: give back what was counted.
            self.held.fetch_sub(bytes, Ordering::Relaxed);
        }
        Ok(Cow::Borrowed(kept))
    }

    #[cfg(test)]
    fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_sorted_and_without_repeats() {
        let w = Words::new(
            ["parse", "json", "parse", "", "a"]
                .map(String::from)
                .to_vec(),
        );
        assert_eq!(w.iter().collect::<Vec<_>>(), ["", "a", "json", "parse"]);
        assert_eq!(w.len(), 4);
        assert_eq!(Words::new(Vec::new()).iter().count(), 0);
    }

    /// Sets are kept until the budget is spent, then derived per call and dropped; a kept
    /// set is derived once.
    #[test]
    fn the_cache_keeps_sets_within_its_budget() {
        let big = || Words::new((0..BUDGET / 64).map(|i| format!("{i:060}")).collect());
        let per_set = big().bytes();
        let fit = BUDGET / per_set;
        let cache = WordCache::new(fit + 3);
        let mut derived = 0;
        for round in 0..2 {
            for file in 0..(fit + 3) as u32 {
                let got = cache
                    .get(file, || {
                        derived += 1;
                        Ok::<_, ()>(big())
                    })
                    .unwrap();
                let kept = (file as usize) < fit;
                assert_eq!(
                    matches!(got, Cow::Borrowed(_)),
                    kept,
                    "round {round} file {file}"
                );
            }
        }
        assert_eq!(derived, fit + 2 * 3);
        assert!(cache.held() <= BUDGET && cache.held() == fit * per_set);
        assert_eq!(cache.get(u32::MAX, || Err(())).unwrap().iter().count(), 0);
    }
}
