// Stand-in for the plugin's plugin-hook-bootstrap.js, which each command
// loads from $CLAUDE_PLUGIN_ROOT to run the script it names: this one
// records how it was run.
require(process.env.REPRISE_TEST_RECORDER + ".js")();
