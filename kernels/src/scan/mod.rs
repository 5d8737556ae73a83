//! Scans: block-level (Hillis-Steele, Blelloch, warp shuffles) and
//! device-level (three-phase, single-pass with tickets, decoupled look-back).

entries! {}
