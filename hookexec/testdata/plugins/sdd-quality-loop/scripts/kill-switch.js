// Stand-in for the plugin's kill-switch.js: records how it was run.
require(process.env.REPRISE_TEST_RECORDER + ".js")();
