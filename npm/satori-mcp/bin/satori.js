#!/usr/bin/env node
// The `satori` (and `satori-mcp`) command: the MCP server of this platform's package.
"use strict";

require("../lib/launch").launch("satori");
