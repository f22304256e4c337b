// A VS Code extension's entry point using agentwire's decoder. The WebAssembly module is read
// from the extension's own folder through VS Code's file system API, which works both in the
// desktop extension host and in VS Code for the Web (no Node APIs, no fetch of the package).
//
// Package `node_modules/agentwire/wasm/agentwire_js_bg.wasm` (the package exports it as
// `agentwire/agentwire.wasm`) into the extension, here as `dist/agentwire.wasm`.
import * as vscode from 'vscode';
import { Decoder, initSync } from 'agentwire/web';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const wasm = vscode.Uri.joinPath(context.extensionUri, 'dist', 'agentwire.wasm');
  initSync(await vscode.workspace.fs.readFile(wasm));

  const channel = vscode.window.createOutputChannel('cursor-agent transcript');
  context.subscriptions.push(
    channel,
    vscode.commands.registerCommand('agentwireExample.showTranscript', async () => {
      const [file] = (await vscode.window.showOpenDialog({ filters: { 'stream-json': ['jsonl'] } })) ?? [];
      if (file === undefined) return;
      // `using` frees the decoder whatever happens.
      using decoder = new Decoder();
      decoder.pushStdout(await vscode.workspace.fs.readFile(file));
      decoder.pushEof();
      for (const event of decoder.drain()) {
        switch (event.type) {
          case 'textDelta':
            channel.append(event.text);
            break;
          case 'agentActivity':
            if (event.phase === 'started') channel.appendLine(`\n[${event.tool}] ${event.summary}`);
            break;
          case 'failed':
            void vscode.window.showErrorMessage(`${event.kind}: ${event.message}`);
            break;
          default:
            break;
        }
      }
      channel.show();
    }),
  );
}

export function deactivate(): void {}
