from bench.common import run
from bench.peers.side_by_side import main

run(main)
