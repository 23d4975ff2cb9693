"""The reports' logic as pure DataFrame → DataFrame transforms (no I/O, no session of their own), unit-tested
on a local Spark session with generated inputs."""
