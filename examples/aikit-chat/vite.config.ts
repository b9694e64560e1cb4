import react from '@vitejs/plugin-react';
import {defineConfig} from 'vite';

// The page talks to chat-bff on its own origin: the dev server (and `vite preview`) forwards
// /api and /v1 to the service. CHAT_BFF_URL says where it runs.
const target = process.env.CHAT_BFF_URL || 'http://127.0.0.1:8000';
const proxy = {
    '/api': {target, changeOrigin: true},
    '/v1': {target, changeOrigin: true},
};

export default defineConfig({
    plugins: [react()],
    server: {proxy},
    preview: {proxy},
});
