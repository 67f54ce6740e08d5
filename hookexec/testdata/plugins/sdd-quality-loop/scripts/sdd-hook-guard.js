// Stand-in for the plugin's sdd-hook-guard.js: records how it was run.
require(process.env.REPRISE_TEST_RECORDER + ".js")();
