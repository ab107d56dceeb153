//! How central each file is in a codebase: how many other files reach into it, by a call
//! that resolution pins to one of its definitions or by an import that names it.
//!
//! Search can use it as file-level evidence (`file_centrality`, off by default): the file
//! where a concept lives is often one that much of the codebase calls or imports, while a
//! neighbour that merely mentions the concept is reached by few. The count is a property of
//! the whole codebase, not of one file, so it comes from the generation's complete resolved
//! graph, computed when a search first asks for it. It is not written with each generation:
//! a sync of one file would then resolve every call of the codebase again, which costs
//! seconds on a large one, for a signal that ships switched off.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::GraphFile;
use super::resolve::{CallGraph, FileImports, FileIndex, file_parts, imported_files};
use crate::Result;

/// Every file's in-degree in the file graph of a generation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Centrality {
    /// (root-relative path, how many other files call into it or import it), for every
    /// file some other file reaches, sorted by path.
    pub files: Vec<(String, u32)>,
}

impl Centrality {
    /// The centrality of the generation in `dir`, from its stored graph, as a map from
    /// path to count; `Ok(None)` when the generation has no graph (it predates the call
    /// graph, or is held in memory) or only a partial one, which would undercount every
    /// file it lacks.
    pub fn of_generation(dir: &Path) -> Result<Option<HashMap<String, u32>>> {
        Ok(GraphFile::load(dir)?.filter(|g| g.complete).map(|g| {
            Centrality::of(&CallGraph::build(g))
                .files
                .into_iter()
                .collect()
        }))
    }

    /// Counts, for every file of `graph`, the distinct other files that have a resolved
    /// call into one of its definitions or an import that names it. Calls count only when
    /// resolution pinned them (an ambiguous call is no evidence of where it goes); imports
    /// are matched by path the way resolution matches them, so `use crate::task::local`
    /// reaches `task/local.rs` and `from .binding import json` reaches `binding/json.py`.
    pub fn of(graph: &CallGraph) -> Centrality {
        let files = &graph.files;
        let mut reached_by: Vec<HashSet<u32>> = vec![HashSet::new(); files.len()];
        for e in &graph.edges {
            let from = graph.nodes[e.src as usize].0;
            let to = graph.nodes[e.dst as usize].0;
            if from != to {
                reached_by[to as usize].insert(from);
            }
        }
        let parts: Vec<Vec<String>> = files.iter().map(|f| file_parts(&f.path)).collect();
        let index = FileIndex::of(files, &parts);
        for (gi, f) in files.iter().enumerate() {
            if f.refs.imports.is_empty() {
                continue;
            }
            let mut imports = FileImports::expand(f);
            for g in imported_files(&index, gi, &mut imports) {
                reached_by[g as usize].insert(gi as u32);
            }
        }
        let mut out: Vec<(String, u32)> = files
            .iter()
            .zip(&reached_by)
            .filter(|(_, r)| !r.is_empty())
            .map(|(f, r)| (f.path.clone(), r.len() as u32))
            .collect();
        out.sort();
        Centrality { files: out }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{CallSite, FileGraph, FileRefs, GraphFile, Import, Receiver};
    use crate::lang::Language;
    use crate::symbol::{Symbol, SymbolKind};

    fn function(name: &str, line: u32) -> Symbol {
        Symbol {
            id: format!("{name}#{line}"),
            name: name.to_owned(),
            label: format!("fn {name}()"),
            kind: SymbolKind::Function,
            start_line: line,
            end_line: line + 2,
            scope: Vec::new(),
        }
    }

    fn call(name: &str, line: u32) -> CallSite {
        CallSite {
            name: name.to_owned(),
            receiver: Receiver::None,
            line,
            args: 0,
        }
    }

    fn file(path: &str, defines: &[&str], calls: &[&str], imports: &[&str]) -> FileGraph {
        FileGraph {
            path: path.to_owned(),
            language: Language::Python,
            symbols: defines
                .iter()
                .enumerate()
                .map(|(i, n)| function(n, 1 + 10 * i as u32))
                .collect(),
            refs: FileRefs {
                // Calls from inside the file's first definition.
                calls: calls.iter().map(|n| call(n, 2)).collect(),
                imports: imports
                    .iter()
                    .map(|p| Import {
                        path: (*p).to_owned(),
                        names: Vec::new(),
                        line: 1,
                    })
                    .collect(),
            },
        }
    }

    /// One case: the files of a codebase and the count each file should get (absent: 0).
    fn check(label: &str, files: Vec<FileGraph>, expected: &[(&str, u32)]) {
        let graph = CallGraph::build(GraphFile {
            files,
            ..GraphFile::new()
        });
        let got = Centrality::of(&graph).files;
        let want: Vec<(String, u32)> = expected.iter().map(|(p, n)| ((*p).into(), *n)).collect();
        assert_eq!(got, want, "{label}");
    }

    #[test]
    fn a_file_counts_the_other_files_that_call_or_import_it() {
        check(
            "calls from two files, one of them twice",
            vec![
                file("core/engine.py", &["run", "stop"], &[], &[]),
                file("cli.py", &["main"], &["run", "stop"], &[]),
                file("server.py", &["serve"], &["run"], &[]),
            ],
            &[("core/engine.py", 2)],
        );
        check(
            "calls within a file are not counted",
            vec![file("core/engine.py", &["run", "stop"], &["stop"], &[])],
            &[],
        );
        check(
            "an ambiguous call reaches nothing",
            vec![
                file("a/util.py", &["helper"], &[], &[]),
                file("b/util.py", &["helper"], &[], &[]),
                file("c/main.py", &["main"], &["helper"], &[]),
            ],
            &[],
        );
        check(
            "an import counts once with the calls of the same file",
            vec![
                file("pkg/binding/json.py", &["bind"], &[], &[]),
                file("pkg/app.py", &["handle"], &["bind"], &["pkg.binding.json"]),
                file("pkg/routes.py", &["route"], &[], &["pkg.binding.json"]),
                file("pkg/binding/xml.py", &["bind_xml"], &[], &[]),
            ],
            &[("pkg/binding/json.py", 2)],
        );
        check(
            "an import of a package reaches its module file",
            vec![
                file("pkg/binding/__init__.py", &["default"], &[], &[]),
                file("pkg/app.py", &["handle"], &[], &["pkg.binding"]),
            ],
            &[("pkg/binding/__init__.py", 1)],
        );
        check(
            "a file importing itself by name is not counted",
            vec![file("pkg/app.py", &["handle"], &[], &["pkg.app"])],
            &[],
        );
    }
}
