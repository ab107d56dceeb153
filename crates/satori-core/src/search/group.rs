//! Turning ranked chunks into hits: raw chunks, or groups (by symbol or file) with diversity
//! caps and short previews; plus the noise report over the visible top results.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::category::{self, Category};
use super::index::Index;
use super::query::Analysis;
use super::rank::Scored;
use super::{
    GroupBy, Hit, NoiseReport, ScoreComponents, SearchDiagnostics, SearchRequest, SearchTuning,
};
use crate::Result;
use crate::SymbolKind;
use crate::store::tokenizer::{CodeTokenizer, may_stem_to};
use crate::util::hash_parts;

/// Output bounds.
const RAW_MAX_CHARS: usize = 4000;
const PREVIEW_MAX_LINES: usize = 8;
const PREVIEW_MAX_CHARS: usize = 400;

/// The noise report looks at this many top results and triggers at this share.
const NOISE_TOP_K: usize = 5;
const NOISE_THRESHOLD: f32 = 0.6;

fn components(s: &Scored) -> ScoreComponents {
    ScoreComponents {
        bm25: s.bm25,
        lexical_rank: s.lexical_rank,
        dense: s.dense,
        dense_rank: s.dense_rank,
        fused: s.fused,
        definition_boost: s.definition,
        path_boost: s.path,
        coherence_boost: s.coherence
            + s.file_vector
            + s.file_names
            + s.file_doc
            + s.file_centrality,
        category_multiplier: s.category_mult,
        category: s.category,
        changed_multiplier: s.changed_mult,
        rerank_score: s.rerank.map(|r| r.0),
        rerank_rank: s.rerank.map(|r| r.1),
        final_score: s.score,
    }
}

fn chunk_group_id(file: &str, start: u32, end: u32) -> String {
    format!(
        "grp_{}",
        hash_parts(&[file, &start.to_string(), &end.to_string()], 16)
    )
}

fn base_hit(ix: &Index, s: &Scored, debug: bool) -> Hit {
    let chunk = ix.chunk(s.ord);
    let file = ix.file(chunk.file);
    Hit {
        group_id: chunk_group_id(&file.path, chunk.start_line, chunk.end_line),
        file: file.path.clone(),
        language: file.language,
        start_line: chunk.start_line,
        end_line: chunk.end_line,
        score: s.score,
        symbol: chunk.symbol.clone(),
        breadcrumbs: chunk.breadcrumbs.clone(),
        text: String::new(),
        indexed_at_ms: file.indexed_at_ms,
        collapsed_chunk_count: 1,
        language_has_symbols: file.language.has_symbols(),
        components: debug.then(|| components(s)),
    }
}

/// The first `limit` ranked chunks as hits.
pub(super) fn raw_hits(
    ix: &Index,
    req: &SearchRequest,
    scored: &[Scored],
    limit: usize,
) -> Result<Vec<Hit>> {
    scored
        .iter()
        .take(limit)
        .map(|s| {
            let mut hit = base_hit(ix, s, req.debug);
            let content = ix.chunk_content(s.ord)?;
            hit.text = truncate_chars(&content, RAW_MAX_CHARS).to_string();
            Ok(hit)
        })
        .collect()
}

/// What a group folds together. Kept as borrowed parts while candidates are grouped (a
/// search groups hundreds); only the groups shown get their string ids.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum GroupKey<'g> {
    Symbol(&'g str),
    Chunk { file: u32, start: u32, end: u32 },
    File(u32),
}

impl GroupKey<'_> {
    fn id(self, ix: &Index) -> String {
        match self {
            GroupKey::Symbol(id) => id.to_string(),
            GroupKey::Chunk { file, start, end } => chunk_group_id(&ix.file(file).path, start, end),
            GroupKey::File(file) => format!("grp_{}", hash_parts(&[&ix.file(file).path], 16)),
        }
    }
}

/// A group under construction: its best chunk, how many chunks it folds, and its score
/// after the per-file decay.
struct Group<'g> {
    key: GroupKey<'g>,
    best: usize,
    count: usize,
    score: f32,
}

/// The first `req.page_size()` groups of the ranked chunks, under the diversity caps.
pub(super) fn grouped_hits(
    ix: &Index,
    req: &SearchRequest,
    scored: &[Scored],
    analysis: &Analysis,
    tuning: &SearchTuning,
    tokenizer: &mut CodeTokenizer,
    diagnostics: &mut SearchDiagnostics,
) -> Result<Vec<Hit>> {
    let limit = req.page_size();
    let weights = &tuning.weights;
    // An operator-only search lists in path and line order: there is no score for a decay
    // to spread.
    let file_decay = if tuning.saturation && !analysis.terms.is_empty() {
        weights.group_file_decay
    } else {
        1.0
    };
    // Candidates are sorted, so the first chunk seen of a group is its representative and
    // groups come out in the order of their best chunks.
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<GroupKey, usize> = HashMap::new();
    for (i, s) in scored.iter().enumerate() {
        let chunk = ix.chunk(s.ord);
        let key = match (req.group_by, &chunk.symbol) {
            (GroupBy::Symbol, Some(sym)) => GroupKey::Symbol(&sym.id),
            (GroupBy::Symbol, None) => GroupKey::Chunk {
                file: chunk.file,
                start: chunk.start_line,
                end: chunk.end_line,
            },
            (GroupBy::File, _) => GroupKey::File(chunk.file),
        };
        match index.get(&key) {
            Some(&gi) => groups[gi].count += 1,
            None => {
                index.insert(key, groups.len());
                groups.push(Group {
                    key,
                    best: i,
                    count: 1,
                    score: s.score,
                });
            }
        }
    }
    // Each further group of a file keeps `file_decay` of the previous one's share: the
    // groups are reordered by their decayed scores (stable, so ties keep the ranking).
    if file_decay < 1.0 {
        let mut seen: HashMap<u32, i32> = HashMap::new();
        for g in &mut groups {
            let k = seen.entry(ix.chunk(scored[g.best].ord).file).or_insert(0);
            g.score *= file_decay.powi(*k);
            *k += 1;
        }
        groups.sort_by(|a, b| b.score.total_cmp(&a.score));
    }

    let select = |per_file: usize| {
        let mut picked = Vec::new();
        let mut by_file: BTreeMap<u32, usize> = BTreeMap::new();
        let mut by_symbol: BTreeMap<&str, usize> = BTreeMap::new();
        let (mut skipped_file, mut skipped_symbol) = (0, 0);
        for (gi, group) in groups.iter().enumerate() {
            if picked.len() >= limit {
                break;
            }
            let chunk = ix.chunk(scored[group.best].ord);
            let files = by_file.entry(chunk.file).or_insert(0);
            if *files >= per_file {
                skipped_file += 1;
                continue;
            }
            if let Some(sym) = &chunk.symbol {
                let n = by_symbol.entry(sym.id.as_str()).or_insert(0);
                if *n >= weights.groups_per_symbol {
                    skipped_symbol += 1;
                    continue;
                }
                *n += 1;
            }
            *files += 1;
            picked.push(gi);
        }
        (picked, skipped_file, skipped_symbol)
    };
    let (mut picked, mut skipped_file, mut skipped_symbol) = select(weights.groups_per_file);
    if picked.len() < limit && skipped_file > 0 {
        (picked, skipped_file, skipped_symbol) = select(weights.groups_per_file_relaxed);
        diagnostics.used_relaxed_cap = true;
    }
    diagnostics.skipped_by_file_cap = skipped_file;
    diagnostics.skipped_by_symbol_cap = skipped_symbol;

    let preview_terms: HashSet<&str> = analysis.terms.iter().map(|t| t.text.as_str()).collect();
    picked
        .into_iter()
        .map(|gi| {
            let group = &groups[gi];
            let s = &scored[group.best];
            let chunk = ix.chunk(s.ord);
            let mut hit = base_hit(ix, s, req.debug);
            hit.score = group.score;
            hit.group_id = group.key.id(ix);
            hit.collapsed_chunk_count = group.count;
            // A symbol group spans its symbol, extended to the end of the chunk that matched:
            // a chunk of merged small siblings runs past its first definition, and the
            // sibling that matched must not fall outside the span the caller will read. (The
            // lines before the first definition are the file's preamble, imports and the
            // like; but when the chunk is named after a later definition, the ones before it
            // are kept too.) A namespace is only a scope: its span is often the whole file,
            // which says nothing about where the match is, so its chunks keep their own lines.
            if let (GroupBy::Symbol, Some(sym)) = (req.group_by, &chunk.symbol)
                && sym.kind != SymbolKind::Namespace
            {
                let first = chunk.defines.first().is_none_or(|d| *d == sym.name);
                hit.start_line = if first {
                    sym.start_line
                } else {
                    sym.start_line.min(chunk.start_line)
                };
                hit.end_line = sym.end_line.max(chunk.end_line);
            }
            let content = ix.chunk_content(s.ord)?;
            hit.text = preview(&content, &preview_terms, tokenizer);
            Ok(hit)
        })
        .collect()
}

/// A short excerpt starting at the first line that contains a query term (or the first
/// non-blank line), at most `PREVIEW_MAX_LINES` lines and `PREVIEW_MAX_CHARS` characters.
fn preview(content: &str, terms: &HashSet<&str>, tokenizer: &mut CodeTokenizer) -> String {
    let lines: Vec<&str> = content.lines().collect();
    let wanted = |seg: &str| terms.iter().any(|t| may_stem_to(seg, t));
    let first_match = lines.iter().position(|line| {
        let mut found = false;
        tokenizer.scan(line, &wanted, &mut |w| found |= terms.contains(w));
        found
    });
    let start = first_match
        .or_else(|| lines.iter().position(|l| !l.trim().is_empty()))
        .unwrap_or(0);
    let end = (start + PREVIEW_MAX_LINES).min(lines.len());
    let text = lines[start.min(end)..end].join("\n");
    truncate_chars(text.trim_end(), PREVIEW_MAX_CHARS).to_string()
}

/// The longest prefix of `s` with at most `max` characters.
fn truncate_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Ignore patterns the noise report may suggest, in the order it lists them.
const NOISE_PATTERNS: [&str; 6] = [
    "**/*.test.*",
    "**/*.spec.*",
    "**/__tests__/**",
    "**/__fixtures__/**",
    "**/fixtures/**",
    "coverage/**",
];

/// Whether one of [`NOISE_PATTERNS`] would ignore `path`.
fn pattern_applies(pattern: &str, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let has_dir = |dir: &str| path.split('/').rev().skip(1).any(|d| d == dir);
    match pattern {
        "**/*.test.*" => name.contains(".test."),
        "**/*.spec.*" => name.contains(".spec."),
        "**/__tests__/**" => has_dir("__tests__"),
        "**/__fixtures__/**" => has_dir("__fixtures__"),
        "**/fixtures/**" => has_dir("fixtures"),
        "coverage/**" => path.starts_with("coverage/"),
        _ => false,
    }
}

/// Suggests ignore rules when tests, fixtures, docs or generated files dominate the top.
pub(super) fn noise_report(hits: &[Hit]) -> Option<NoiseReport> {
    let top = &hits[..hits.len().min(NOISE_TOP_K)];
    if top.is_empty() {
        return None;
    }
    let categories: Vec<Category> = top
        .iter()
        .map(|h| category::categorize(&h.file, h.language))
        .collect();
    let noisy = categories.iter().filter(|c| c.is_noise()).count();
    let k = top.len() as f32;
    if (noisy as f32) / k < NOISE_THRESHOLD {
        return None;
    }
    let share = |pred: &dyn Fn(Category) -> bool| {
        let n = categories.iter().filter(|&&c| pred(c)).count() as f32;
        (n / k * 100.0).round() / 100.0
    };
    let ratios = vec![
        ("tests".to_string(), share(&|c| c == Category::Tests)),
        ("fixtures".to_string(), share(&|c| c == Category::Fixtures)),
        ("docs".to_string(), share(&|c| c == Category::Docs)),
        (
            "generated".to_string(),
            share(&|c| c == Category::Generated),
        ),
        ("runtime".to_string(), share(&|c| !c.is_noise())),
    ];
    let noisy_paths: Vec<&str> = top
        .iter()
        .zip(&categories)
        .filter(|(_, c)| c.is_noise())
        .map(|(h, _)| h.file.as_str())
        .collect();
    let suggested = NOISE_PATTERNS
        .iter()
        .filter(|pattern| noisy_paths.iter().any(|p| pattern_applies(pattern, p)))
        .map(|pattern| pattern.to_string())
        .collect();
    Some(NoiseReport {
        top_k: top.len(),
        ratios,
        suggested_ignore_patterns: suggested,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_preview(content: &str, terms: &[&str], expected: &str) {
        let terms: HashSet<&str> = terms.iter().copied().collect();
        let got = preview(content, &terms, &mut CodeTokenizer::default());
        assert_eq!(got, expected);
    }

    #[test]
    fn previews() {
        let body: String = (1..=20).map(|i| format!("line{i}\n")).collect();
        // Starts at the first line naming a term, at most eight lines.
        check_preview(
            &body,
            &["line5"],
            "line5\nline6\nline7\nline8\nline9\nline10\nline11\nline12",
        );
        // No match: from the first non-blank line.
        check_preview("\n\n  a\nb\n", &["zzz"], "  a\nb");
        // Parts of identifiers count (stemmed): `retri` is in `retryCount`.
        check_preview(
            "let x = 1;\nlet retryCount = 2;\n",
            &["retri"],
            "let retryCount = 2;",
        );
        // Long lines are cut at 400 characters (on a character boundary).
        let long = "é".repeat(1000);
        check_preview(&long, &["zzz"], &"é".repeat(400));
        check_preview("", &["a"], "");
    }

    #[test]
    fn noise_patterns() {
        let applies = |p: &str| -> Vec<&str> {
            NOISE_PATTERNS
                .iter()
                .copied()
                .filter(|pat| pattern_applies(pat, p))
                .collect()
        };
        assert_eq!(applies("src/a.test.ts"), ["**/*.test.*"]);
        assert_eq!(
            applies("src/__tests__/a.spec.js"),
            ["**/*.spec.*", "**/__tests__/**"]
        );
        assert_eq!(applies("tests/fixtures/u.json"), ["**/fixtures/**"]);
        assert_eq!(applies("src/__fixtures__/x.ts"), ["**/__fixtures__/**"]);
        assert_eq!(applies("coverage/lcov.info"), ["coverage/**"]);
        assert!(applies("src/fixtures.ts").is_empty());
    }
}
