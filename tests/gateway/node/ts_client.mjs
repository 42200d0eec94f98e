// Drives the gateway with the TypeScript SDK client and prints one JSON summary line.
// Usage: node ts_client.mjs <mcp url> <pin|legacy>
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, mode] = process.argv.slice(2);
const versionNegotiation = mode === 'legacy' ? { mode: 'legacy' } : { mode: { pin: '2026-07-28' } };
const client = new Client({ name: 'eco-ts-test', version: '1.0.0' }, { versionNegotiation });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const tools = await client.listTools();
const ping = await client.callTool({ name: 'eco_ping', arguments: { check_api: false } });
let unknown = null;
try {
  const result = await client.callTool({ name: 'eco_pnig', arguments: {} });
  unknown = { isError: result.isError ?? false, structuredContent: result.structuredContent ?? null };
} catch (err) {
  unknown = { code: err.code, data: err.data ?? null, message: String(err.message) };
}
console.log(JSON.stringify({
  protocolVersion: client.getNegotiatedProtocolVersion(),
  server: client.getServerVersion() ?? null,
  tools: tools.tools.map((t) => t.name),
  ping: { isError: ping.isError ?? false, structuredContent: ping.structuredContent, meta: ping._meta ?? null },
  unknown,
}));
await client.close();
