#!/usr/bin/env node
// The `mcat` command: the shell client for any MCP server, from this platform's package.
"use strict";

require("../lib/launch").launch("mcat");
