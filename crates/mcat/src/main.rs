//! `mcat`: the binary edge. Everything it does lives in the library, where tests reach it.

fn main() {
    std::process::exit(mcat::main_with_args(std::env::args_os()));
}
