//! Device-wide scans.
