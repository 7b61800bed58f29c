'use strict';
// The login page: say why we are back here.
if (new URLSearchParams(location.search).has('failed')) {
  document.getElementById('failed').hidden = false;
}
