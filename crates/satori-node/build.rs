//! Build script of the Node addon: napi-build sets the linker flags a Node addon needs
//! (symbols resolved by the host `node` process at load time).

fn main() {
    napi_build::setup();
}
