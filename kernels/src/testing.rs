//! Kernels that misbehave on purpose, so tests can show the emulator
//! catches each kind of misuse a GPU would not survive.

entries! {}
