<?php
// Stand-in for WP-CLI on the test source host (tests/support/source_host/source_host.py installs it as
// ~/bin/wp with the PHP binary on the first line). The real WP-CLI is not installable from the
// package registries the project uses, so this implements the handful of commands the SSH
// executor and the tests call, with WP-CLI's output shapes:
//
//   wp --info | --version
//   wp core version | core is-installed
//   wp option get NAME
//   wp db export [FILE|-] [--add-drop-table]
//   wp db query [SQL]                       (SQL from the argument or stdin)
//   wp search-replace OLD NEW --dry-run     (counts occurrences in a dump; changes nothing)
//   global: --path=DIR
//
// Database credentials come from wp-config.php. They reach the MariaDB client through an option
// file on an inherited pipe (/dev/fd/3), never through the command line or a file on disk.

const WP_CLI_VERSION = '2.11.0';

function fail($msg, $code = 1)
{
    fwrite(STDERR, "Error: $msg\n");
    exit($code);
}

function parse_args($argv)
{
    $out = ['path' => null, 'pos' => [], 'flags' => []];
    foreach (array_slice($argv, 1) as $arg) {
        if (strncmp($arg, '--', 2) === 0 && strlen($arg) > 2) {
            $kv = explode('=', substr($arg, 2), 2);
            if ($kv[0] === 'path') {
                $out['path'] = $kv[1] ?? '';
            } else {
                $out['flags'][$kv[0]] = $kv[1] ?? true;
            }
        } else {
            $out['pos'][] = $arg;
        }
    }
    return $out;
}

function find_root($path)
{
    if ($path !== null) {
        $dir = realpath($path);
        return ($dir !== false && is_file("$dir/wp-config.php")) ? $dir : null;
    }
    $dir = getcwd();
    while ($dir !== false && $dir !== '') {
        if (is_file("$dir/wp-config.php")) {
            return $dir;
        }
        $parent = dirname($dir);
        if ($parent === $dir) {
            break;
        }
        $dir = $parent;
    }
    return null;
}

function require_root($path)
{
    $root = find_root($path);
    if ($root === null) {
        fail("This does not seem to be a WordPress installation.\n"
            . "Pass --path=`path/to/wordpress` or run `wp core download`.");
    }
    return $root;
}

function read_config($root)
{
    $text = file_get_contents("$root/wp-config.php");
    if ($text === false) {
        fail("Could not read $root/wp-config.php.");
    }
    $cfg = ['DB_NAME' => '', 'DB_USER' => '', 'DB_PASSWORD' => '', 'DB_HOST' => 'localhost', 'prefix' => 'wp_'];
    if (preg_match_all('/define\(\s*[\'"](DB_[A-Z_]+)[\'"]\s*,\s*[\'"]([^\'"]*)[\'"]\s*\)/', $text, $m, PREG_SET_ORDER)) {
        foreach ($m as $one) {
            $cfg[$one[1]] = $one[2];
        }
    }
    if (preg_match('/\$table_prefix\s*=\s*[\'"]([A-Za-z0-9_]+)[\'"]/', $text, $m)) {
        $cfg['prefix'] = $m[1];
    }
    return $cfg;
}

function option_file($cfg)
{
    $q = function ($v) { return '"' . addcslashes($v, "\\\"") . '"'; };
    $lines = ["[client]", "user=" . $q($cfg['DB_USER']), "password=" . $q($cfg['DB_PASSWORD'])];
    $host = $cfg['DB_HOST'];
    if (preg_match('/^(.*):(\/.*)$/', $host, $m)) {          // localhost:/path/to/socket
        $lines[] = "socket=" . $q($m[2]);
    } elseif (preg_match('/^(.*):(\d+)$/', $host, $m)) {      // 127.0.0.1:3306
        $lines[] = "host=" . $q($m[1]);
        $lines[] = "port=" . $m[2];
        $lines[] = "protocol=TCP";
    } else {
        $lines[] = "host=" . $q($host);
    }
    $lines[] = "skip-ssl";
    return implode("\n", $lines) . "\n";
}

function client_binary($names)
{
    foreach ($names as $name) {
        foreach (['/usr/bin', '/usr/local/bin', '/bin'] as $dir) {
            if (is_executable("$dir/$name")) {
                return "$dir/$name";
            }
        }
    }
    fail("No MariaDB/MySQL client found (" . implode(', ', $names) . ").");
}

// Run a MariaDB client program with the credentials on fd 3. $stdout: a stream to pass through
// or null to capture. Returns [exit code, captured stdout, stderr].
function run_client($cfg, $names, $args, $stdin = null, $stdout = null)
{
    $cmd = array_merge([client_binary($names), '--defaults-file=/dev/fd/3'], $args);
    $spec = [0 => ['pipe', 'r'], 1 => $stdout ?? ['pipe', 'w'], 2 => ['pipe', 'w'], 3 => ['pipe', 'r']];
    $proc = proc_open($cmd, $spec, $pipes);
    if (!is_resource($proc)) {
        fail("Could not start " . $cmd[0]);
    }
    fwrite($pipes[3], option_file($cfg));
    fclose($pipes[3]);
    if ($stdin !== null) {
        fwrite($pipes[0], $stdin);
    }
    fclose($pipes[0]);
    $out = $stdout === null ? stream_get_contents($pipes[1]) : '';
    if ($stdout === null) {
        fclose($pipes[1]);
    }
    $err = stream_get_contents($pipes[2]);
    fclose($pipes[2]);
    return [proc_close($proc), $out, $err];
}

function query($cfg, $sql)
{
    list($rc, $out, $err) = run_client($cfg, ['mariadb', 'mysql'], ['-N', '-B', $cfg['DB_NAME']], $sql);
    if ($rc !== 0) {
        fail("Error establishing a database connection. " . trim($err));
    }
    return $out;
}

function cmd_info()
{
    $php = PHP_BINARY;
    $uname = php_uname();
    $shell = getenv('SHELL') ?: '/bin/sh';
    $version = PHP_VERSION;
    $ini = php_ini_loaded_file() ?: '';
    $cli = WP_CLI_VERSION;
    echo "OS:\t$uname\nShell:\t$shell\nPHP binary:\t$php\nPHP version:\t$version\nphp.ini used:\t$ini\n"
        . "MySQL binary:\t" . client_binary(['mariadb', 'mysql']) . "\n"
        . "WP-CLI root dir:\tphar://wp-cli.phar/vendor/wp-cli/wp-cli\nWP-CLI version:\t$cli\n";
}

function cmd_core($a)
{
    $sub = $a['pos'][1] ?? '';
    $root = require_root($a['path']);
    if ($sub === 'version') {
        $text = @file_get_contents("$root/wp-includes/version.php");
        if ($text === false || !preg_match('/\$wp_version\s*=\s*[\'"]([^\'"]+)[\'"]/', $text, $m)) {
            fail("Could not read the WordPress version.");
        }
        echo $m[1], "\n";
        return 0;
    }
    if ($sub === 'is-installed') {
        $cfg = read_config($root);
        list($rc) = run_client($cfg, ['mariadb', 'mysql'], ['-N', '-B', $cfg['DB_NAME']],
            "SELECT option_value FROM `{$cfg['prefix']}options` WHERE option_name = 'siteurl'");
        return $rc === 0 ? 0 : 1;
    }
    fail("'core $sub' is not a registered subcommand of 'core'. See 'wp help core' for available subcommands.");
}

function cmd_option($a)
{
    $sub = $a['pos'][1] ?? '';
    $name = $a['pos'][2] ?? '';
    if ($sub !== 'get' || $name === '') {
        fail("usage: wp option get <key>");
    }
    if (!preg_match('/^[A-Za-z0-9_.\-]+$/', $name)) {
        fail("Could not get '$name' option. Does it exist?");
    }
    $cfg = read_config(require_root($a['path']));
    $out = query($cfg, "SELECT option_value FROM `{$cfg['prefix']}options` WHERE option_name = '$name' LIMIT 1");
    if ($out === '') {
        fail("Could not get '$name' option. Does it exist?");
    }
    // -B escapes tabs/newlines in values; undo the common ones.
    echo strtr(rtrim($out, "\n"), ['\\n' => "\n", '\\t' => "\t", '\\\\' => '\\']), "\n";
    return 0;
}

function dump($cfg, $add_drop, $stdout)
{
    $args = ['--single-transaction', '--quick', $add_drop ? '--add-drop-table' : '--skip-add-drop-table', $cfg['DB_NAME']];
    return run_client($cfg, ['mariadb-dump', 'mysqldump'], $args, null, $stdout);
}

function cmd_db($a)
{
    $sub = $a['pos'][1] ?? '';
    $root = require_root($a['path']);
    $cfg = read_config($root);
    if ($sub === 'export') {
        $file = $a['pos'][2] ?? ($a['flags']['result-file'] ?? null);
        $add_drop = isset($a['flags']['add-drop-table']);
        if ($file === '-') {
            list($rc, , $err) = dump($cfg, $add_drop, STDOUT);
            if ($rc !== 0) {
                fail("Failed to get current character set of the posts table. " . trim($err));
            }
            return 0;
        }
        if ($file === null) {
            $file = $cfg['DB_NAME'] . '-' . date('Y-m-d') . '-' . substr(md5(uniqid('', true)), 0, 7) . '.sql';
        }
        $handle = fopen($file, 'w');
        if ($handle === false) {
            fail("Could not write to $file.");
        }
        list($rc, , $err) = dump($cfg, $add_drop, $handle);
        fclose($handle);
        if ($rc !== 0) {
            @unlink($file);
            fail(trim($err));
        }
        echo "Success: Exported to '$file'.\n";
        return 0;
    }
    if ($sub === 'query') {
        $sql = $a['pos'][2] ?? stream_get_contents(STDIN);
        list($rc, $out, $err) = run_client($cfg, ['mariadb', 'mysql'], [$cfg['DB_NAME']], $sql);
        echo $out;
        if ($rc !== 0) {
            fail(trim($err));
        }
        return 0;
    }
    fail("'db $sub' is not a registered subcommand of 'db'. See 'wp help db' for available subcommands.");
}

function cmd_search_replace($a)
{
    $old = $a['pos'][1] ?? '';
    $new = $a['pos'][2] ?? null;
    if ($old === '' || $new === null) {
        fail("Please specify the search and replace strings.");
    }
    if (!isset($a['flags']['dry-run'])) {
        fail("This stand-in only supports --dry-run.");
    }
    $cfg = read_config(require_root($a['path']));
    list($rc, $out, $err) = dump($cfg, false, null);
    if ($rc !== 0) {
        fail(trim($err));
    }
    $count = substr_count($out, $old);
    echo "Success: $count replacement" . ($count === 1 ? '' : 's') . " to be made.\n";
    return 0;
}

$a = parse_args($argv);
if (isset($a['flags']['info'])) {
    cmd_info();
    exit(0);
}
if (isset($a['flags']['version'])) {
    echo "WP-CLI ", WP_CLI_VERSION, "\n";
    exit(0);
}
$command = $a['pos'][0] ?? '';
switch ($command) {
    case 'core':
        exit(cmd_core($a));
    case 'option':
        exit(cmd_option($a));
    case 'db':
        exit(cmd_db($a));
    case 'search-replace':
        exit(cmd_search_replace($a));
    case '':
        echo "usage: wp <command> (stand-in: --info, core, option get, db export, db query, search-replace --dry-run)\n";
        exit(0);
    default:
        fail("'$command' is not a registered wp command. See 'wp help' for available commands.");
}
