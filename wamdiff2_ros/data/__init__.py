"""NAVSIM-format data: safe log reader, synthetic driving world, multi-task samples."""
