import '@gravity-ui/uikit/styles/styles.css';
import '@gravity-ui/aikit/styles';

import {ThemeProvider, configure} from '@gravity-ui/uikit';
import {StrictMode} from 'react';
import {createRoot} from 'react-dom/client';

import {App} from './App';
import './app.css';

configure({lang: 'en'});

createRoot(document.getElementById('root')!).render(
    <StrictMode>
        <ThemeProvider theme="light">
            <App />
        </ThemeProvider>
    </StrictMode>,
);
