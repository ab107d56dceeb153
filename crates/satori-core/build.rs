//! Lays the bundled model's vocabulary (`assets/model/vocab.txt`) out as a static hash
//! table (`src/embed/piece_table.rs`), so that no process builds one at run time.

#[path = "src/embed/piece_table.rs"]
#[allow(dead_code)]
mod piece_table;

use std::path::PathBuf;

const VOCAB: &str = "assets/model/vocab.txt";

/// Tells cargo when to run this script again. A build script's stdout is read by cargo, not
/// by any user of Satori: its `cargo:` lines are the only way to talk to it.
#[allow(clippy::disallowed_methods)]
fn rerun_if_changed(paths: &[&str]) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for path in paths {
        writeln!(out, "cargo:rerun-if-changed={path}").expect("write to cargo");
    }
}

fn main() {
    rerun_if_changed(&[VOCAB, "src/embed/piece_table.rs"]);
    let text = std::fs::read_to_string(VOCAB).expect("read the bundled vocabulary");
    assert!(
        !text.contains('\r'),
        "vocab.txt lines must end in \\n alone"
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() < usize::from(u16::MAX),
        "ids must fit the low half of a slot"
    );
    let slots = piece_table::slot_count(lines.len());
    let mut table = vec![0u32; slots];
    for (id, line) in lines.iter().enumerate() {
        let (continuation, piece) = piece_table::key(line);
        let hash = piece_table::hash(continuation, piece);
        let mut at = hash as usize & (slots - 1);
        loop {
            match table[at] & 0xffff {
                0 => break,
                s if piece_table::key(lines[s as usize - 1]) == (continuation, piece) => break,
                _ => at = (at + 1) & (slots - 1),
            }
        }
        table[at] = piece_table::slot(id, hash);
    }
    // Where each line starts in the text (one more entry: the end), so a piece is a slice.
    let mut offsets = Vec::with_capacity(lines.len() + 1);
    let mut at = 0u32;
    for line in text.split_inclusive('\n') {
        offsets.push(at);
        at += line.len() as u32;
    }
    offsets.push(at);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let bytes: Vec<u8> = table.iter().flat_map(|s| s.to_le_bytes()).collect();
    std::fs::write(out.join("vocab_slots.bin"), bytes).expect("write the table");
    let bytes: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    std::fs::write(out.join("vocab_offsets.bin"), bytes).expect("write the offsets");
}
